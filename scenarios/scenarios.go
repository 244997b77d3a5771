// Package scenarios holds the playground's scenario definitions, as data: one YAML file per
// scenario (routes, identities, phases, client behaviour, system knobs and expectations).
// They are embedded so `boxoffice scenario` and the playground carry them in their binary;
// boxoffice.dev/playground/scenario parses them. The k6/ directory holds the same scenarios
// as k6 scripts for people who use k6; it is not embedded.
package scenarios

import "embed"

// FS holds every scenarios/*.yaml file at its root.
//
//go:embed *.yaml
var FS embed.FS
