package formats_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
	"github.com/sessionlog/sessionlog/internal/testkit/sweep"
)

// generatedSeeds is how many traces of each format the property test
// converts: 40 by default, 150 under SESSIONLOG_SWEEPS=full.
var generatedSeeds = sweep.Size(40, 150, 150)

// TestGeneratedTraces converts traces of every format written by its
// generator (records of every type the format defines, in random shapes)
// and checks, for each: the format is recognised by its content alone;
// the session is one the log takes, holds every source record, and holds
// every prompt, assistant text, call and result of the source — as the
// generator wrote them, and as the test's own reading of the trace counts
// them — and no other user/message; every turn is closed.
func TestGeneratedTraces(t *testing.T) {
	reg := formats.Registry()
	gens := importertest.Generators()
	for _, name := range slices.Sorted(maps.Keys(gens)) {
		imp, err := reg.Lookup(name)
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			for seed := range uint64(generatedSeeds) {
				src, want := gens[name](seed)
				what := fmt.Sprintf("%s seed %d", name, seed)
				head := src[:min(len(src), importer.SniffBytes)]
				var sniffed []string
				for _, i := range reg.Sniff(head) {
					sniffed = append(sniffed, i.Name())
				}
				require.Equal(t, []string{name}, sniffed, "%s: recognised by its content", what)

				s, err := importer.Parse(t.Context(), imp, bytes.NewReader(src), "/gen/"+name+".trace", importer.Config{})
				require.NoError(t, err, "%s\n%s", what, src)
				importertest.CheckSession(t, s, name)
				importertest.CheckLossless(t, imp, src, s)
				counted, err := importertest.SourceCounts(name, src)
				require.NoError(t, err)
				importertest.CheckCounts(t, want, counted, what+": the test's reading of the trace")
				importertest.CheckCounts(t, want, importertest.SessionCounts(s.Events), what)
				importertest.CheckClosed(t, s.Events)
				if t.Failed() {
					t.Logf("%s:\n%s", what, src)
					return
				}
			}
		})
	}
}
