// Package endpoint reads where a service's instances are: a base URL per instance, or a DNS
// name and port whose addresses are the instances. It is the one set of rules shared by the
// policy's validation, which names the field at fault, and the upstream layer, which dials
// what it returns, so that whatever a policy accepts the upstream layer accepts too.
package endpoint

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ParseInstance reads an instance's base URL, "http://host:port" or "https://host:port";
// "host:port" alone means http. A trailing "/" is allowed; a path, query, fragment or
// user information is not, since the gateway would silently drop it. The port is required
// and numeric (1-65535): a default port would hide a typo. The result has only Scheme and
// Host set.
func ParseInstance(raw string) (*url.URL, error) {
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // the url.Error repeats the input, already quoted below
		}
		return nil, fmt.Errorf("%q: %w", HideUser(raw), err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: scheme must be http or https", HideUser(raw))
	case u.Hostname() == "" || u.Port() == "":
		return nil, fmt.Errorf("%q: want scheme://host:port, such as http://127.0.0.1:8102", HideUser(raw))
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.User != nil || u.Fragment != "":
		return nil, fmt.Errorf("%q: want scheme://host:port and nothing more", HideUser(raw))
	}
	if n, err := strconv.ParseUint(u.Port(), 10, 16); err != nil || n == 0 {
		return nil, fmt.Errorf("%q: the port must be a number from 1 to 65535", HideUser(raw))
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// HideUser is raw with any user information hidden, for an error message or a log: an
// instance written with a password in it (which ParseInstance refuses) must not put the
// password in the logs. It hides too much rather than too little: everything from the
// scheme to the last "@".
func HideUser(raw string) string {
	if at := strings.LastIndex(raw, "@"); at >= 0 {
		start := 0
		if i := strings.Index(raw, "://"); i >= 0 && i < at {
			start = i + len("://")
		}
		raw = raw[:start] + "(hidden)" + raw[at:]
	}
	return raw
}

// ParseDNS reads a DNS service, "host:port" or "scheme://host:port", under the rules of
// ParseInstance: host is the name to resolve, and each of its addresses with port is an
// instance reached over scheme.
func ParseDNS(raw string) (scheme, host, port string, err error) {
	u, err := ParseInstance(raw)
	if err != nil {
		return "", "", "", err
	}
	return u.Scheme, u.Hostname(), u.Port(), nil
}
