package main

import (
	"context"
	"errors"
	"flag"
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

// run dispatches a subcommand; args[0] is the program name. A subcommand asked for help
// (-h, --help) prints its usage on stdout and returns flag.ErrHelp, a success.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if err := command(ctx, args, getenv, stdout, stderr); !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil
}

func command(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
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
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		if isHelp(cmd) {
			fmt.Fprint(stdout, usage)
			return nil
		}
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// isHelp reports whether arg asks for help as the flag package understands it: -h, -help,
// --h or --help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--h", "--help":
		return true
	}
	return false
}

// parseFlags parses args into fs. Asked for help (-h, --help), it prints fs's usage on stdout
// and returns flag.ErrHelp; given a bad flag, it prints the usage on stderr and returns the
// error, which names the flag.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	fs.SetOutput(io.Discard) // the flag package's own message is the error returned
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
	case err != nil:
		fs.SetOutput(stderr)
		fs.Usage()
	}
	return err
}

// setUsage makes fs's usage head, then the list of its flags, printed on fs's output.
func setUsage(fs *flag.FlagSet, head string) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), head, "\nflags:\n")
		fs.PrintDefaults()
	}
}
