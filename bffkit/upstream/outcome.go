package upstream

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"boxoffice.dev/platform/problem"
)

// CodeOutcomeUnknown is extensions.code of a write whose answer was lost: the service may or
// may not have done it.
const CodeOutcomeUnknown = "OUTCOME_UNKNOWN"

// WriteError is the GraphQL error of a write call's err. A write that timed out or found its
// service unavailable may have been done all the same (the service goes on after the BFF
// gives up), so it is not reported as failed: its code is CodeOutcomeUnknown, and its message
// says what a retry does (retry: RetryKeyed, RetryUnkeyed, or the write's own words). Other
// errors are returned as they are: the service answered.
func WriteError(ctx context.Context, err error, what, retry string) error {
	if problem.CodeOf(err) != problem.Unavailable {
		return err
	}
	return &gqlerror.Error{
		Message:    "the answer to " + what + " was lost and it may have been done: " + retry,
		Path:       graphql.GetPath(ctx),
		Extensions: map[string]any{"code": CodeOutcomeUnknown},
	}
}

// What a retry does after CodeOutcomeUnknown, for a write that takes an idempotency key.
const (
	RetryKeyed   = "retrying with the same idempotencyKey is safe and answers with what was done"
	RetryUnkeyed = "without an idempotencyKey a retry may do it twice; look before retrying"
)

// Retry is RetryKeyed when the client sent key, else RetryUnkeyed.
func Retry(key string) string {
	if key != "" {
		return RetryKeyed
	}
	return RetryUnkeyed
}
