package replaytest

import (
	"flag"
	"os"
	"strings"
)

// EnvUpdate names the environment variable that, set to 1 or true, makes
// Golden and Dir rewrite goldens, as -update does.
const EnvUpdate = "SESSIONLOG_UPDATE_GOLDEN"

// updateFlag is the name of the flag that rewrites goldens.
const updateFlag = "update"

func init() {
	// Another package of the same test binary (a golden-file library, the
	// caller's own tests) may have registered -update already; defining it
	// twice would panic, and reading the existing one serves the same end.
	if flag.Lookup(updateFlag) == nil {
		flag.Bool(updateFlag, false, "rewrite the golden files of replaytest (also: "+EnvUpdate+"=1)")
	}
}

// Updating reports whether goldens are to be rewritten: -update was given,
// or SESSIONLOG_UPDATE_GOLDEN is 1 or true.
func Updating() bool {
	if v := os.Getenv(EnvUpdate); v == "1" || strings.EqualFold(v, "true") {
		return true
	}
	f := flag.Lookup(updateFlag)
	return f != nil && f.Value.String() == "true"
}
