package ratelimit

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
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
