package assistant

import (
	"log/slog"
	"net/http"
	"strconv"

	"boxoffice.dev/platform/httpapi"
	"boxoffice.dev/platform/problem"
)

// TokensHeader carries what an answer cost, for the gateway's token-weighted quota.
const TokensHeader = "X-Boxoffice-Tokens"

// handleAsk answers POST /v1/assistant/ask {"question": "..."} with the Answer, its cost in
// TokensHeader as well as in the body.
func handleAsk(log *slog.Logger, a *Assistant) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Question string `json:"question"`
		}
		err := httpapi.DecodeJSON(r, &body)
		var ans Answer
		if err == nil {
			ans, err = a.Ask(r.Context(), body.Question)
		}
		if err != nil {
			problem.Write(w, r, log, err)
			return
		}
		w.Header().Set(TokensHeader, strconv.Itoa(ans.Tokens))
		httpapi.WriteJSON(w, http.StatusOK, ans)
	})
}
