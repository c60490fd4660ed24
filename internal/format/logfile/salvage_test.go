package logfile_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/internal/format/logfile"
)

func TestSalvage(t *testing.T) {
	enc := eventlog.NewEncoder([]string{})
	hdr, err := eventlog.EncodeHeader(logfile.NewHeader("01JDX3N0Q3Z8Y6W2D1V5K7M9PA", 1))
	require.NoError(t, err)
	row := func(seq int64) string {
		return string(enc.AppendRows(nil, []eventlog.Event{{Seq: seq, Type: "a", Time: 1}}))
	}
	log := func(rows ...string) []byte {
		b := append(append([]byte(nil), hdr...), '\n')
		for _, r := range rows {
			b = append(b, r...)
		}
		return b
	}
	type skip struct{ first, last int64 }
	for _, tc := range []struct {
		name  string
		file  []byte
		seqs  []int64
		skips []skip
		torn  bool
	}{
		{"clean", log(row(0), row(1)), []int64{0, 1}, nil, false},
		{"garbage row", log(row(0), "garbage\n", row(2)), []int64{0, 2}, []skip{{1, 1}}, false},
		{"NUL hole", log(row(0), "\x00\x00\x00\n", row(2)), []int64{0, 2}, []skip{{1, 1}}, false},
		{"seq gap", log(row(0), row(3), row(4)), []int64{0, 3, 4}, []skip{{1, 2}}, false},
		{"duplicate", log(row(0), row(1), row(1), row(2)), []int64{0, 1, 2}, []skip{{1, 0}}, false},
		{"garbage to the end", log(row(0), "xx\n", "yy\n"), []int64{0}, []skip{{1, -1}}, false},
		{"torn tail after damage", log(row(0), "xx\n", row(2), `{"seq":3`), []int64{0, 2}, []skip{{1, 1}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seqs []int64
			res, err := logfile.Salvage(bytes.NewReader(tc.file), int64(len(tc.file)), nil, "f", func(e eventlog.Event) bool {
				seqs = append(seqs, e.Seq)
				return true
			})
			require.NoError(t, err)
			require.Equal(t, tc.seqs, seqs)
			require.Equal(t, int64(len(tc.seqs)), res.Events)
			var got []skip
			for _, s := range res.Skips {
				got = append(got, skip{s.FirstLost, s.LastLost})
				require.NotEmpty(t, s.Reason)
			}
			require.Equal(t, tc.skips, got)
			require.Equal(t, tc.torn, res.Torn != nil)
		})
	}
	_, err = logfile.Salvage(bytes.NewReader([]byte("nope\n")), 5, nil, "f", func(eventlog.Event) bool { return true })
	require.ErrorIs(t, err, eventlog.ErrCorrupt, "no salvage without a header")
}

// FuzzSalvage: a salvage read of any bytes never panics, and yields
// strictly increasing seqs.
func FuzzSalvage(f *testing.F) {
	hdr := `{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":1}` + "\n"
	f.Add([]byte(hdr + `{"seq":0,"type":"a","time":1}` + "\n"))
	f.Add([]byte(hdr + `{"seq":0,"type":"a","time":1}` + "\nxx\n" + `{"seq":2,"type":"a","time":1}` + "\n"))
	f.Add([]byte(hdr + `{"seq":1,"type":"a","time":1}` + "\n\x00\x00\n" + `{"seq":1,"type":"a","time":1}` + "\n"))
	f.Add([]byte(hdr + `{"seq":0,"type":"a","n":2,"time":[1,2],"data":[1,2]}` + "\n" + `{"seq":5,"type":"a","time":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		last := int64(-1 << 62)
		_, _ = logfile.Salvage(bytes.NewReader(b), int64(len(b)), nil, "f", func(e eventlog.Event) bool {
			if e.Seq <= last {
				t.Fatalf("seq %d after %d", e.Seq, last)
			}
			last = e.Seq
			return true
		})
	})
}

// A Reader started with AnySeq accepts whatever seq the first row holds;
// started with a seq, it refuses another there.
func TestAnySeq(t *testing.T) {
	rows := `{"seq":7,"type":"x","time":1,"data":null}` + "\n" + `{"seq":8,"type":"x","time":2,"data":null}` + "\n"
	tests := []struct {
		name    string
		next    int64
		corrupt bool
	}{
		{"any seq", logfile.AnySeq, false},
		{"the row's seq", 7, false},
		{"another seq", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := eventlog.NewReader(strings.NewReader(rows), eventlog.WithStart(100, tt.next))
			var seqs []int64
			for r.Next() {
				seqs = append(seqs, r.Event().Seq)
			}
			if tt.corrupt {
				var ce *eventlog.CorruptError
				require.ErrorAs(t, r.Err(), &ce)
				require.Equal(t, int64(100), ce.Offset)
				require.Empty(t, seqs)
				return
			}
			require.NoError(t, r.Err())
			require.Equal(t, []int64{7, 8}, seqs)
		})
	}
}
