package main

import (
	"context"
	"fmt"
	"io"
)

const usage = `usage: boxoffice <command> [flags]

commands:
  up        run every BoxOffice component in this process on fixed loopback ports
  lab       replay a request trace through the rate-limiting algorithms
  scenario  list the playground's scenarios, or run one headless and check its expectations

Run 'boxoffice <command> -h' for a command's flags.
`

// run dispatches a subcommand; args[0] is the program name.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command given")
	}
	switch cmd, rest := args[1], args[2:]; cmd {
	case "up":
		return runUp(ctx, rest, getenv, stdout, stderr)
	case "lab":
		return runLab(ctx, rest, stdout, stderr)
	case "scenario":
		return runScenario(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
