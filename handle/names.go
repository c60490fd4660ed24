package handle

import (
	"fmt"
	"strings"

	"github.com/sessionlog/sessionlog/eventlog"
)

// AmbiguousError reports a name (an ID prefix, a label query) that several
// sessions answer to, as git reports a short commit hash that is not
// unique. Match it with errors.AsType[*AmbiguousError] (the only shape of
// this error, so it has no sentinel).
type AmbiguousError struct {
	Name string
	// Candidates are the sessions the name fits, the last active first.
	// A session whose tail cannot be read has only its ID.
	Candidates []Info
}

// Error implements error.
func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("handle: %q names %d sessions", e.Name, len(e.Candidates))
}

// LastActive is when the session last did something, in Unix
// milliseconds: its last event's time, or its creation when that is later
// (event times are the writer's to set, so a session is never older than
// its header says). ls sorts and shows it, and GC collects by it.
func (i Info) LastActive() int64 {
	if i.LastType != "" && i.LastTime > i.Header.CreatedAt {
		return i.LastTime
	}
	return i.Header.CreatedAt
}

// ParseName says what a session name is (docs/cli.md, SESSION): a label
// query, k=v or k1=v1,k2=v2 — labels are the pairs a session's header
// must hold, a comma starting a new pair only when what follows it holds
// an "=", so that a value may hold commas (cwd=/a,b) —, or the start of a
// session ID (idPrefix: 1 to 26 Crockford base32 characters in either
// case, the first 0–7), or neither (labels nil, idPrefix false).
func ParseName(name string) (labels map[string]string, idPrefix bool) {
	if labels, ok := labelQuery(name); ok {
		return labels, false
	}
	return nil, isIDPrefix(name)
}

// labelQuery parses a label query (ParseName); ok is false when name is
// no query: it has no "=", or a key is empty.
func labelQuery(name string) (labels map[string]string, ok bool) {
	if !strings.Contains(name, "=") {
		return nil, false
	}
	var pairs []string
	for _, part := range strings.Split(name, ",") {
		if len(pairs) > 0 && !strings.Contains(part, "=") {
			pairs[len(pairs)-1] += "," + part
			continue
		}
		pairs = append(pairs, part)
	}
	labels = map[string]string{}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		if k == "" {
			return nil, false
		}
		labels[k] = v
	}
	return labels, true
}

// isIDPrefix reports whether name can begin a session ID (ParseName).
func isIDPrefix(name string) bool {
	if name == "" || len(name) > 26 {
		return false
	}
	up := strings.ToUpper(name)
	return eventlog.ValidID(up + strings.Repeat("0", 26-len(up)))
}
