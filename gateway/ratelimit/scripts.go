package ratelimit

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptFiles are the Lua sources: decide.lua, the frame of every decision, and one file per
// algorithm, named after it.
//
//go:embed scripts/*.lua
var scriptFiles embed.FS

// algorithmsLine is the line of decide.lua where the algorithms of a call go.
const algorithmsLine = "-- {algorithms}\n"

// algorithmSet is a set of algorithms: bit i stands for Algorithms[i].
type algorithmSet uint8

// with returns the set plus a, which must be one of Algorithms.
func (s algorithmSet) with(a Algorithm) algorithmSet {
	return s | 1<<slices.Index(Algorithms, a)
}

// luaScript is one composed script in the two forms a call sends: the SHA1 digest, for
// EVALSHA, and the source, for the EVAL that answers NOSCRIPT. Both are boxed once: an any
// made from a string variable allocates, and this one would at every call.
type luaScript struct {
	sha, src any
}

// decideScripts holds the script of each set of algorithms, composed on first use: at most
// one per subset of the six Algorithms, in practice the few that a policy's routes combine.
// A seventh algorithm needs a larger array (TestDecideScriptsLoad would say so).
var decideScripts [1 << 6]atomic.Pointer[luaScript]

// decideScript returns the script that decides requests using the algorithms of set.
// Concurrent first uses may compose it twice; they compose the same text and keep either.
func decideScript(set algorithmSet) (*luaScript, error) {
	if s := decideScripts[set].Load(); s != nil {
		return s, nil
	}
	src, err := composeDecide(set)
	if err != nil {
		return nil, err
	}
	sum := sha1.Sum([]byte(src))
	s := &luaScript{sha: hex.EncodeToString(sum[:]), src: src}
	decideScripts[set].Store(s)
	return s, nil
}

// hierarchySet holds the algorithms a hierarchy may use.
var hierarchySet = algorithmSet(0).with(TokenBucket).with(GCRA)

// chainScripts holds the scripts of calls holding hierarchies (hierarchy.go), by set of
// algorithms as decideScripts: a flat call never runs their extra code.
var chainScripts [1 << 6]atomic.Pointer[luaScript]

// chainScript returns the script that decides calls holding hierarchies with the algorithms
// of set: decide.lua's clock, helpers and algorithms, then chain.lua's passes.
func chainScript(set algorithmSet) (*luaScript, error) {
	if s := chainScripts[set].Load(); s != nil {
		return s, nil
	}
	src, err := composeDecide(set)
	if err != nil {
		return nil, err
	}
	body, err := scriptFiles.ReadFile("scripts/chain.lua")
	if err != nil {
		return nil, fmt.Errorf("ratelimit: script: %w", err)
	}
	// chain.lua replaces the frame's passes, which start at the one-rule case, and keeps
	// its check.
	frame, _, found := strings.Cut(src, passesLine)
	if !found {
		return nil, fmt.Errorf("ratelimit: script: decide.lua lacks the line %q", passesLine)
	}
	src = frame + string(body)
	sum := sha1.Sum([]byte(src))
	s := &luaScript{sha: hex.EncodeToString(sum[:]), src: src}
	chainScripts[set].Store(s)
	return s, nil
}

// passesLine starts the part of decide.lua after check: its passes.
const passesLine = "\n-- One rule: spend at once"

// composeDecide pastes the files of the algorithms in set into decide.lua, in the order of
// Algorithms: a set always gives the same text, so every gateway replica sends the same
// script and Redis keeps one copy of it.
func composeDecide(set algorithmSet) (string, error) {
	frame, err := scriptFiles.ReadFile("scripts/decide.lua")
	if err != nil {
		return "", fmt.Errorf("ratelimit: script: %w", err)
	}
	var pieces strings.Builder
	for i, a := range Algorithms {
		if set&(1<<i) == 0 {
			continue
		}
		piece, err := scriptFiles.ReadFile("scripts/" + string(a) + ".lua")
		if err != nil {
			return "", fmt.Errorf("ratelimit: script of %s: %w", a, err)
		}
		pieces.Write(piece)
		pieces.WriteString("\n")
	}
	before, after, found := strings.Cut(string(frame), algorithmsLine)
	if !found {
		return "", fmt.Errorf("ratelimit: script: decide.lua lacks the line %q", algorithmsLine)
	}
	return before + pieces.String() + after, nil
}

// warmPing bounds Warm's first question to each server, whether it answers at all.
const warmPing = 250 * time.Millisecond

// Warm readies the limiter for its first decisions: it loads the script of every set of
// algorithms into Redis, into every master of a Cluster, which also dials a connection to
// each. Without it the first decision of a fresh gateway pays a dial, a NOSCRIPT and the
// script's compilation within the decision's timeout (5 ms in production): on a busy machine
// that misses, and a fail-closed route such as login answers 503 to the first users after a
// start. A failure is returned for the caller to log; decisions work without the warm-up.
func (r *Redis) Warm(ctx context.Context) error {
	load := func(ctx context.Context, c *redis.Client) error {
		// A server that is down answers no faster for being asked again: the client would
		// redial until ctx ends, and hold the caller's start that long.
		pctx, cancel := context.WithTimeout(ctx, warmPing)
		err := c.Ping(pctx).Err()
		cancel()
		if err != nil {
			return err
		}
		p := c.Pipeline()
		for set := algorithmSet(1); set < 1<<len(Algorithms); set++ {
			s, err := decideScript(set)
			if err != nil {
				return err
			}
			p.ScriptLoad(ctx, s.src.(string))
			if set&^hierarchySet == 0 {
				if s, err = chainScript(set); err != nil {
					return err
				}
				p.ScriptLoad(ctx, s.src.(string))
			}
		}
		_, err = p.Exec(ctx)
		return err
	}
	switch c := r.client.(type) {
	case *redis.Client:
		return load(ctx, c)
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, load)
	}
	return nil
}
