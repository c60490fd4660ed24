package eventlog_test

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// packedRows returns a packed row of n, time and data (the JSON texts of
// its arrays) with n before time and data, as our writer writes it (the
// decoder collects the arrays' elements as it validates them), and with
// n last (it scans them again once n is known).
func packedRows(n, time, data string) (nFirst, nLast string) {
	return `{"seq":1,"type":"x","n":` + n + `,"time":` + time + `,"data":` + data + `}`,
		`{"seq":1,"type":"x","time":` + time + `,"data":` + data + `,"n":` + n + `}`
}

// requireSameDecode asserts that a packed row decodes the same with n
// first and n last: the same events, or both rejected — for the same
// reason when the reason is about the packing (other reasons name byte
// offsets, which differ between the two orders).
func requireSameDecode(t *testing.T, n, time, data string) {
	t.Helper()
	first, last := packedRows(n, time, data)
	a, errA := eventlog.DecodeRow([]byte(first))
	b, errB := eventlog.DecodeRow([]byte(last))
	require.Equal(t, errA == nil, errB == nil, "n first: %v; n last: %v", errA, errB)
	if errA == nil {
		require.Equal(t, b, a)
		return
	}
	if strings.Contains(errB.Error(), "packed") {
		require.EqualError(t, errA, errB.Error())
	}
}

func TestDecodeRowPackedSameInEveryKeyOrder(t *testing.T) {
	for _, tc := range []struct{ name, n, time, data string }{
		{"valid", "3", "[1,2,3]", `[{"a":1},null,"x"]`},
		{"valid with whitespace", "2", "[ 1 , 2 ]", `[ [ ] , { } ]`},
		{"fewer times", "3", "[1,2]", "[1,2,3]"},
		{"more times", "2", "[1,2,3]", "[1,2]"},
		{"fewer data", "3", "[1,2,3]", "[1,2]"},
		{"more data", "2", "[1,2]", "[1,2,3]"},
		{"a time not an integer", "2", "[1,2.5]", "[1,2]"},
		{"a negative time", "2", "[-1,2]", "[1,2]"},
		{"a bad time past n", "2", "[1,2,x]", "[1,2]"},
		{"a non-integer time past n", "2", "[1,2,3.5]", "[1,2]"},
		{"a bad time before n runs out", "3", "[1,1.5,2,3]", "[1,2,3]"},
		{"bad JSON in data", "2", "[1,2]", "[1,]"},
		{"data not an array", "2", "[1,2]", `{"a":1}`},
		{"time not an array", "2", "7", "[1,2]"},
		{"empty arrays", "2", "[]", "[]"},
		{"n of 1", "1", "[1]", "[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) { requireSameDecode(t, tc.n, tc.time, tc.data) })
	}
}

// TestDecodeRowPackedRandom draws packed rows whose arrays are a little
// off (lengths around n, an element that is not an integer, JSON that
// breaks) and decodes each in both key orders.
func TestDecodeRowPackedRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	timeElems := []string{"1", "17", "0", "-3", "2.5", "1e3", `"t"`, "null", "x"}
	dataElems := []string{"1", `{"text":"a"}`, "null", "[]", `"s"`, "{", "]"}
	arr := func(elems []string, k int) string {
		parts := make([]string, k)
		for i := range parts {
			parts[i] = elems[0]
			if rng.IntN(6) == 0 {
				parts[i] = elems[rng.IntN(len(elems))]
			}
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	for range 5000 {
		n := 2 + rng.IntN(5)
		requireSameDecode(t, strconv.Itoa(n), arr(timeElems, n-1+rng.IntN(3)), arr(dataElems, n-1+rng.IntN(3)))
	}
}

// FuzzDecodeRowPackedOrder checks that a packed row decodes the same with
// n before and after its arrays.
func FuzzDecodeRowPackedOrder(f *testing.F) {
	f.Add("3", "[1,2,3]", `[{"a":1},null,"x"]`)
	f.Add("2", "[1,2,3]", "[1,2]")
	f.Add("2", "[1,2.5]", "[1,]")
	f.Fuzz(func(t *testing.T, n, time, data string) {
		requireSameDecode(t, n, time, data)
	})
}

// The events of a packed row share one allocation for their data, yet
// each Data is the caller's: changing one, or appending to it, leaves the
// others as they were, and none is touched by reading on.
func TestReaderPackedDataIndependent(t *testing.T) {
	want := packedEvents(0, 4)
	want[2].Data = nil // a null in the packed data array
	log := hdrLine + string(eventlog.NewEncoder(nil).AppendRows(nil, want)) + rows(4, 1)
	r := eventlog.NewReader(strings.NewReader(log))
	var got []eventlog.Event
	for r.Next() {
		e := r.Event()
		require.Equal(t, len(e.Data), cap(e.Data), "Data of seq %d is capped at its length", e.Seq)
		got = append(got, e)
	}
	require.NoError(t, r.Err())
	require.Len(t, got, 5)
	require.Nil(t, got[2].Data)
	got[0].Data = append(got[0].Data, "XYZ"...)
	got[1].Data[0] = '#'
	for k, e := range got[:4] {
		w := want[k].Data
		switch k {
		case 0:
			w = append(bytes.Clone(w), "XYZ"...)
		case 1:
			w = append([]byte{'#'}, w[1:]...)
		}
		require.Equal(t, string(w), string(e.Data), "seq %d", e.Seq)
	}
}
