package dsh

import (
	"context"
	"io"

	"github.com/sessionlog/sessionlog/importer"
)

// NewBlankAsSkipped is New whose conversion takes a blank line for a gap
// in the source's numbering, as a row SkipBad went past is: what a log
// with the rows SkipBad skipped left blank must import as.
func NewBlankAsSkipped() importer.Importer {
	return importer.Format{Label: Name, Suffix: ".jsonl", SniffFunc: Sniff,
		ConvertFunc: func(ctx context.Context, r io.ReadSeeker, name string, cfg importer.Config, emit importer.Emit) (importer.Session, error) {
			return convertRows(ctx, r, name, cfg, emit, true)
		}}
}
