package eventlog_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/eventlog"
)

// firstBlockHeader returns the offset of a frame's first block header.
func firstBlockHeader(b []byte, off int64) int64 {
	fhd := b[off+4]
	pos := off + 5 + int64([4]int{0, 1, 2, 4}[fhd&3])
	if fhd&0x20 == 0 {
		pos++
	}
	fcs := int64([4]int{0, 2, 4, 8}[fhd>>6])
	if fhd>>6 == 0 && fhd&0x20 != 0 {
		fcs = 1
	}
	return pos + fcs
}

// A damaged size field in a middle frame's block header makes the frame
// seem to run on (past the next frames, or past the end of the file): that
// is corruption when valid frames follow, never a torn tail that a writer
// would cut with the acknowledged frames after it.
func TestZstdDamagedBlockSizeIsCorruption(t *testing.T) {
	codec, err := eventlog.NewZstdCodec(0)
	require.NoError(t, err)
	defer codec.Close()
	enc := eventlog.NewEncoder(nil)
	hdr, err := eventlog.EncodeHeader(eventlog.NewHeader("01JDX3N0Q3Z8Y6W2D1V5K7M9PA", 1))
	require.NoError(t, err)
	file, _ := codec.AppendFrames(nil, append(hdr, '\n'))
	for f := range 3 {
		var evs []eventlog.Event
		for i := range 5 {
			evs = append(evs, eventlog.Event{Seq: int64(f*5 + i), Type: "x", Time: 1})
		}
		file, _ = codec.AppendFrames(file, enc.AppendRows(nil, evs))
	}
	frames, _ := eventlog.ZstdFrames(bytes.NewReader(file), int64(len(file)))
	require.Len(t, frames, 4)
	for _, tc := range []struct {
		name  string
		frame int
		size  uint32
	}{
		{"runs past the end of the file", 1, 100000},
		{"runs past the next frame's start", 2, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(file)
			f := frames[tc.frame]
			p := firstBlockHeader(b, f.Offset)
			bh := uint32(b[p]) | uint32(b[p+1])<<8 | uint32(b[p+2])<<16
			size := bh >> 3
			if tc.size < 1000 {
				size += tc.size
			} else {
				size = tc.size
			}
			bh = bh&7 | size<<3
			b[p], b[p+1], b[p+2] = byte(bh), byte(bh>>8), byte(bh>>16)
			r := eventlog.NewZstdReader(bytes.NewReader(b), codec)
			n := 0
			for r.Next() {
				n++
			}
			var ce *eventlog.CorruptError
			require.ErrorAs(t, r.Err(), &ce)
			require.Nil(t, r.Torn())
			require.Equal(t, f.Offset, ce.Offset)
			require.Equal(t, int64((tc.frame-1)*5), ce.Seq)
			require.Equal(t, (tc.frame-1)*5, n)
		})
	}
}
