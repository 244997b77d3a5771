package problem

import "boxoffice.dev/platform/textrule"

// CheckText returns nil when s follows textrule.Strict (valid UTF-8 without control
// characters), else an Invalid error naming field. It is the rule for what a request names
// things by: path segments, query values, ids, keys and cursors, where no one types a tab
// or a line break. The package textrule says why the rule exists.
func CheckText(field, s string) error {
	if !textrule.Valid(s) {
		return InvalidField(field, textrule.Strict)
	}
	return nil
}

// CheckFreeText is CheckText for free text (a title, a description, a question), held to
// textrule.Free: tab, line feed and carriage return are allowed, as a pasted paragraph
// holds them.
func CheckFreeText(field, s string) error {
	if !textrule.ValidFree(s) {
		return InvalidField(field, textrule.Free)
	}
	return nil
}
