package control

import (
	"encoding/json"
	"net/http"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

// Handler serves this replica's knobs: GET returns them as JSON, PUT replaces them with
// the JSON body (all fields; absent ones become zero) and returns what is now in force.
// To change every replica of a service, Publish instead.
func (h *Hook) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPut:
			var in knobsJSON
			if err := httpapi.DecodeJSON(r, &in); err != nil {
				problem.Write(w, r, h.log, err)
				return
			}
			if err := h.Set(in.knobs()); err != nil {
				problem.Write(w, r, h.log, err)
				return
			}
			h.log.InfoContext(r.Context(), "control knobs set over http", "knobs", in)
		default:
			w.Header().Set("Allow", "GET, HEAD, PUT")
			problem.Write(w, r, h.log, problem.New(problem.Invalid, "method %s is not allowed; use GET or PUT", r.Method))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(h.Knobs())
	})
}
