package server

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"boxoffice.dev/platform/config"
)

// helpKey marks the context of a process asked for its settings (see Exec).
type helpKey struct{}

// asksHelp reports whether a process's arguments, less its name, are a request for help:
// -h, -help or --help, alone. A deployable reads only its environment; any other argument
// is left to the RunFunc.
func asksHelp(args []string) bool {
	return len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")
}

func withHelp(ctx context.Context) context.Context { return context.WithValue(ctx, helpKey{}, true) }

func helpRequested(ctx context.Context) bool {
	asked, _ := ctx.Value(helpKey{}).(bool)
	return asked
}

// writeSettings prints the variables a component reads, the platform's and its own, with
// their defaults: the settings load reads from an empty environment.
func writeSettings[C any](w io.Writer, spec Spec, load func(*config.Reader) C) error {
	r := config.New(nil)
	readSettings(r, spec, load)
	fmt.Fprintf(w, "%s takes no flags: it reads its settings from these environment variables.\n\n", spec.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  VARIABLE\tDEFAULT\tVALUE")
	for _, v := range r.Vars() {
		def := v.Default
		if def == "" {
			def = "(unset)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Name, def, v.Want)
	}
	return tw.Flush()
}
