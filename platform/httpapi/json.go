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

// WriteCreated answers a create that an Idempotency-Key may repeat: 201 when this request
// created v, else 200 marked Idempotent-Replayed: true, v being what the first request with
// the key created, as it is now. Location names v either way.
func WriteCreated(w http.ResponseWriter, location string, created bool, v any) {
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", location)
	WriteJSON(w, status, v)
}
