package redisconn

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ClusterScheme marks a Redis Cluster URL: redis+cluster://[user:pass@]h1:p1,h2:p2[?options]
// lists seed nodes (any subset of the cluster; the client discovers the rest) and takes the
// options of redis.ParseClusterURL (dial_timeout=1s, read_timeout=…). rediss+cluster://
// does the same over TLS.
const ClusterScheme = "redis+cluster"

// Dial returns the Redis at rawURL (a single server, or a cluster written as
// redis+cluster://) with a client made as Resolve makes them, but with none of Resolve's
// choices: no local server, no emulator, no first PING. It is for a process that acts on
// another one's store (the playground pausing the limiter's), not one that keeps its data
// there. The client connects lazily; the caller closes the Resolved.
func Dial(rawURL string) (*Resolved, error) {
	c, err := clientFromURL(rawURL)
	if err != nil {
		return nil, err
	}
	return &Resolved{Client: c, URL: rawURL, Source: SourceEnv}, nil
}

// clientFromURL makes a client of the Redis named by a REDIS_URL; it connects lazily.
func clientFromURL(raw string) (redis.UniversalClient, error) {
	var c redis.UniversalClient
	if strings.HasPrefix(raw, ClusterScheme+"://") || strings.HasPrefix(raw, "rediss+cluster://") {
		opts, err := parseClusterURL(raw)
		if err != nil {
			return nil, err
		}
		opts.MaintNotificationsConfig = maintNotificationsOff()
		c = redis.NewClusterClient(opts)
	} else {
		opts, err := redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("redis url %s: %w", redactedURL(raw), err)
		}
		opts.MaintNotificationsConfig = maintNotificationsOff()
		c = redis.NewClient(opts)
	}
	return c, nil
}

// parseClusterURL rewrites redis+cluster://h1,h2?q into the form redis.ParseClusterURL reads,
// redis://h1?addr=h2&q: a comma-separated host list is the readable way to write seeds in an
// environment variable, but net/url rejects it.
func parseClusterURL(raw string) (*redis.ClusterOptions, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	scheme = strings.TrimSuffix(scheme, "+cluster")
	authority, query, _ := strings.Cut(rest, "?")
	authority = strings.TrimSuffix(authority, "/") // a trailing slash, as in h1,h2/?opt=1
	if strings.Contains(authority, "/") {
		return nil, fmt.Errorf("redis cluster url %s: a cluster has no database number", redactedURL(raw))
	}
	userinfo := ""
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, authority = authority[:at+1], authority[at+1:]
	}
	var hosts []string
	for h := range strings.SplitSeq(authority, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("redis cluster url %s: %w", redactedURL(raw), errors.New("no hosts"))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("redis cluster url %s: %w", redactedURL(raw), err)
	}
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	opts, err := redis.ParseClusterURL(scheme + "://" + userinfo + hosts[0] + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("redis cluster url %s: %w", redactedURL(raw), err)
	}
	return opts, nil
}

// redactedURL hides a password so a URL can be logged and put in errors.
func redactedURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority, tail, _ := strings.Cut(rest, "?")
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(authority[:at], ":")
	if !hasPass {
		return raw
	}
	out := scheme + "://" + user + ":xxxxx" + authority[at:]
	if tail != "" {
		out += "?" + tail
	}
	return out
}
