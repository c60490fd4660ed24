package formats_test

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/importer/formats"
	"github.com/sessionlog/sessionlog/internal/testkit/importertest"
)

// BenchmarkParse imports the generated traces of each format
// (importertest's generators, seeds 1 to 40, each a session), all of
// them an op: MB/s is of the source read. Each event keeps its source
// record, so an importer writes every byte it reads at least once.
//
//	go test -run '^$' -bench BenchmarkParse -count 5 ./importer/formats/
func BenchmarkParse(b *testing.B) {
	reg := formats.Registry()
	gens := importertest.Generators()
	for _, name := range slices.Sorted(maps.Keys(gens)) {
		imp, err := reg.Lookup(name)
		if err != nil {
			b.Fatal(err)
		}
		var traces [][]byte
		n := 0
		for seed := range uint64(40) {
			t, _ := gens[name](seed + 1)
			traces = append(traces, t)
			n += len(t)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				for _, t := range traces {
					if _, err := importer.Parse(b.Context(), imp, bytes.NewReader(t), "s.jsonl", importer.Config{}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
