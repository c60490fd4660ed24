package main

import (
	"bytes"
	"fmt"
)

// readme describes the corpus: what each fixture covers and how to
// regenerate it.
func readme(ws []written) []byte {
	var b bytes.Buffer
	b.WriteString(`# The fixture corpus

Written by ` + "`go run ./internal/cmd/gencorpus`" + ` (from the repository root); do not edit by
hand. Each session has a golden file per built-in projection beside it,
` + "`<fixture>.<name>-v<version>.golden.json`" + `, the projection's state after the whole log.
` + "`go test ./replay/replaytest`" + ` replays every fixture and compares (replaytest.Dir).

To regenerate after changing the generator, then review the diff:

    go run ./internal/cmd/gencorpus
    go test ./replay/replaytest -run Corpus -update

After a change of a projection's behaviour, only the second command.

| file | session | encoding | events | covers |
|---|---|---|---|---|
`)
	for _, w := range ws {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %d | %s |\n", w.file, w.id, w.encoding, w.events, w.about)
	}
	return b.Bytes()
}
