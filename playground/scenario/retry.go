package scenario

import (
	"fmt"

	"boxoffice.dev/playground/load"
)

// retryPolicy turns a policy name into the load engine's client behaviour.
func retryPolicy(name string, retries int) (load.Behaviour, error) {
	return load.Policy(name, retries)
}

var _ = fmt.Sprintf
