package docs

import (
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestSlug holds heading anchors to GitHub's: lower case, punctuation dropped, spaces to
// hyphens, letters of any script and underscores kept, link and code markup removed.
func TestSlug(t *testing.T) {
	tests := []struct{ name, heading, want string }{
		{"punctuation", "429 or 503: whose fault is it?", "429-or-503-whose-fault-is-it"},
		{"commas", "Rate limit, quota, throttling", "rate-limit-quota-throttling"},
		{"code span", "The `RateLimit` fields", "the-ratelimit-fields"},
		{"link", "See [Failsafe](x.go#Failsafe) here", "see-failsafe-here"},
		{"letters of any script", "Ação é Über", "ação-é-über"},
		{"underscores and hyphens kept", "on_store_failure and fail-open", "on_store_failure-and-fail-open"},
		{"symbols dropped", "N × limit / N → 1", "n--limit--n--1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slug(tt.heading); got != tt.want {
				t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
			}
		})
	}
}

// document is a markdown file as the checks read it: its links, its fenced code blocks and
// the anchors of its headings. It is not a full CommonMark parser; it reads the subset the
// docs are written in: ATX headings, fenced code blocks, inline links and images,
// reference definitions and code spans (whose contents are never links).
type document struct {
	links   []link
	fences  []fence
	anchors map[string]bool
}

// link is one link target and the line it is on.
type link struct {
	line   int
	target string
}

// fence is a fenced code block: the line of its opening fence, its info string ("mermaid")
// and its contents.
type fence struct {
	line int
	info string
	text string
}

// parseDocument reads src.
func parseDocument(src string) document {
	doc := document{anchors: map[string]bool{}}
	lines := strings.Split(src, "\n")
	prose := make([]string, len(lines)) // lines outside fences; fenced lines stay empty
	slugs := map[string]int{}
	for i := 0; i < len(lines); i++ {
		marker, info, ok := openingFence(lines[i])
		if !ok {
			prose[i] = lines[i]
			if h, ok := heading(lines[i]); ok {
				doc.anchors[uniqueSlug(slugs, h)] = true
			}
			continue
		}
		f := fence{line: i + 1, info: info}
		var body []string
		for i++; i < len(lines) && !closesFence(lines[i], marker); i++ {
			body = append(body, lines[i])
		}
		f.text = strings.Join(body, "\n")
		doc.fences = append(doc.fences, f)
	}
	doc.links = scanLinks(strings.Join(prose, "\n"))
	return doc
}

// openingFence reports whether line opens a fenced code block: three or more backticks or
// tildes, then the info string. marker is the fence itself, which a closing line must match.
func openingFence(line string) (marker, info string, ok bool) {
	t := strings.TrimLeft(line, " \t")
	for _, c := range "`~" {
		n := len(t) - len(strings.TrimLeft(t, string(c)))
		if n >= 3 {
			info = strings.TrimSpace(t[n:])
			if c == '`' && strings.Contains(info, "`") {
				return "", "", false // an inline code span, not a fence
			}
			if f := strings.Fields(info); len(f) > 0 {
				info = strings.ToLower(f[0])
			}
			return t[:n], info, true
		}
	}
	return "", "", false
}

// closesFence reports whether line closes the fence opened by marker: the same character,
// at least as many, nothing after.
func closesFence(line, marker string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == ""
}

// heading returns the text of an ATX heading ("## Rate limits" → "Rate limits").
func heading(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	n := len(t) - len(strings.TrimLeft(t, "#"))
	if n < 1 || n > 6 || len(t) == n || t[n] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[n:]), "#")), true
}

// uniqueSlug is the anchor GitHub gives a heading: its text without markup, lower-cased,
// punctuation dropped, spaces turned into hyphens; a repeated slug gets -1, -2… in order.
func uniqueSlug(seen map[string]int, text string) string {
	s := slug(text)
	n := seen[s]
	seen[s] = n + 1
	if n > 0 {
		return s + "-" + strconv.Itoa(n)
	}
	return s
}

func slug(text string) string {
	text = stripLinks(text)
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// stripLinks replaces each inline link in text by its text: "[Failsafe](x.go#F)" → "Failsafe".
func stripLinks(text string) string {
	for {
		open := strings.Index(text, "[")
		if open < 0 {
			return text
		}
		end, _, ok := inlineLink(text, open)
		if !ok {
			return text
		}
		text = text[:open] + text[open+1:closingBracket(text, open)] + text[end:]
	}
}

// scanLinks finds the inline links, images and reference definitions of prose, skipping
// code spans and backslash escapes.
func scanLinks(prose string) []link {
	var links []link
	line, counted := 1, 0 // the line of position counted
	lineAt := func(pos int) int {
		line += strings.Count(prose[counted:pos], "\n")
		counted = pos
		return line
	}
	for i := 0; i < len(prose); {
		switch prose[i] {
		case '\\':
			i += 2
		case '`':
			i = skipCodeSpan(prose, i)
		case '[':
			if end, target, ok := inlineLink(prose, i); ok {
				links = append(links, link{line: lineAt(i), target: target})
				i = end
				continue
			}
			if target, ok := definition(prose, i); ok {
				links = append(links, link{line: lineAt(i), target: target})
			}
			i++
		default:
			i++
		}
	}
	return links
}

// skipCodeSpan returns the position after the code span that starts at i, or after its
// opening backticks when no run of the same length closes it within the paragraph (the
// backticks are then literal).
func skipCodeSpan(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	para := len(s)
	if p := strings.Index(s[i:], "\n\n"); p >= 0 {
		para = i + p
	}
	for j := i + n; j < para; {
		if s[j] != '`' {
			j++
			continue
		}
		m := 0
		for j+m < len(s) && s[j+m] == '`' {
			m++
		}
		if m == n {
			return j + m
		}
		j += m
	}
	return i + n
}

// inlineLink reads "[text](target "title")" starting at the '[' at i. It returns the
// position after the closing parenthesis and the target.
func inlineLink(s string, i int) (end int, target string, ok bool) {
	j := closingBracket(s, i)
	if j < 0 || j+1 >= len(s) || s[j+1] != '(' {
		return 0, "", false
	}
	k := j + 2
	for k < len(s) && (s[k] == ' ' || s[k] == '\n') {
		k++
	}
	start := k
	if k < len(s) && s[k] == '<' { // <target with spaces>
		e := strings.IndexAny(s[k:], ">\n")
		if e < 0 || s[k+e] != '>' {
			return 0, "", false
		}
		target, k = s[k+1:k+e], k+e+1
	} else {
		depth := 0
	dest:
		for ; k < len(s); k++ {
			switch s[k] {
			case '\\':
				k++
			case '(':
				depth++
			case ')':
				if depth == 0 {
					break dest
				}
				depth--
			case ' ', '\n', '\t':
				break dest
			}
		}
		target = s[start:min(k, len(s))]
	}
	// An optional title, then the closing parenthesis.
	rest := s[min(k, len(s)):]
	trimmed := strings.TrimLeft(rest, " \n")
	if len(trimmed) > 0 && (trimmed[0] == '"' || trimmed[0] == '\'') {
		q := trimmed[0]
		e := strings.IndexByte(trimmed[1:], q)
		if e < 0 {
			return 0, "", false
		}
		trimmed = strings.TrimLeft(trimmed[e+2:], " \n")
	}
	if len(trimmed) == 0 || trimmed[0] != ')' {
		return 0, "", false
	}
	return len(s) - len(trimmed) + 1, target, true
}

// closingBracket returns the position of the ']' that closes the '[' at i, or -1. Brackets
// nest; code spans and escapes inside are skipped; a blank line ends the search.
func closingBracket(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '`':
			j = skipCodeSpan(s, j) - 1
		case '[':
			depth++
		case ']':
			if depth--; depth == 0 {
				return j
			}
		case '\n':
			if j+1 < len(s) && s[j+1] == '\n' {
				return -1
			}
		}
	}
	return -1
}

// definition reads a reference definition, "[label]: target", at the start of a line.
func definition(s string, i int) (string, bool) {
	if i > 0 && s[i-1] != '\n' && strings.TrimSpace(s[strings.LastIndexByte(s[:i], '\n')+1:i]) != "" {
		return "", false
	}
	j := closingBracket(s, i)
	if j < 0 || j+1 >= len(s) || s[j+1] != ':' {
		return "", false
	}
	line := s[j+2:]
	if e := strings.IndexByte(line, '\n'); e >= 0 {
		line = line[:e]
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return "", false
	}
	return strings.Trim(fields[0], "<>"), true
}
