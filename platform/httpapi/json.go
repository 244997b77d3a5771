package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"boxoffice.dev/platform/problem"
)

// WriteJSON answers with status and v as application/json, ending in a newline as
// json.Encoder writes it.
//
// v is encoded before anything is written, so a value that cannot be encoded (a bug: a
// channel, a failing MarshalJSON) still gets a whole answer: 500 with a problem body, as an
// internal error. The trace and the HTTP metrics record that 500; nothing else reports it.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		problem.WriteDetails(w, http.StatusInternalServerError, problem.Details{
			Type: "about:blank", Title: http.StatusText(http.StatusInternalServerError),
			Status: http.StatusInternalServerError, Code: problem.Internal, Detail: "internal error",
		})
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
