package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// run checks the one URL in args and reports the answer's status line on stdout, which the
// container runtime keeps in the healthcheck log.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	timeout := fs.Duration("timeout", 2*time.Second, "how long the whole request may take")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w (usage: healthcheck [-timeout 2s] URL)", err)
	}
	if fs.NArg() != 1 {
		return errors.New("want one URL (usage: healthcheck [-timeout 2s] URL)")
	}
	url := fs.Arg(0)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("request: %w", err)
	}
	// No proxy: a container's HTTP_PROXY must not carry a request to its own loopback.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512)) // why it is not ready, when it says
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("get %s: %s: %s", url, resp.Status, body)
	}
	fmt.Fprintf(stdout, "%s: %s\n", url, resp.Status)
	return nil
}
