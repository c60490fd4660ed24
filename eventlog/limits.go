package eventlog

// The limits of a row. They are part of the wire format of version 1, and
// they are defined here once for the writer and the reader: the reader
// refuses a row past any of them (corruption), and the writer checks each
// on the row it will actually write — a packed row included, which nests
// its events' data one level deeper and holds several of them — so that no
// acknowledged event is unreadable (docs/format.md, Rows). Event.Validate and Storable
// check an event as an unpacked row; the Encoder packs an event only when
// the packed row stays within the limits too (packable, and the size
// arithmetic of appendRun), splitting a run otherwise.
const (
	// MaxRowSize is the largest row, in bytes without its '\n', that may be
	// written or read.
	MaxRowSize = 16 << 20
	// maxTypeLen is the longest event type, in bytes.
	maxTypeLen = 128
	// MaxDepth is the deepest nesting of arrays and objects in a value of
	// a row, counted from the row's values (the row object is not
	// counted): an unpacked row's data may nest MaxDepth levels, the data
	// of an event in a packed row MaxDepth-1, since it sits inside the
	// row's data array. It bounds the scanner's recursion, so that crafted
	// data cannot exhaust the stack.
	MaxDepth = 10000
)

// packedDataDepth is the depth at which a packed row holds each event's
// data: one level down, inside the row's data array.
const packedDataDepth = 1

// packable reports whether e's data may sit in a packed row: nested one
// level deeper there, it must stay within MaxDepth. Data nested d levels
// deep has at least 2d bytes, so short data is not scanned.
func packable(e Event) bool {
	if len(e.Data) < 2*(MaxDepth-packedDataDepth+1) {
		return true
	}
	_, _, err := scanDepth(e.Data, skipWS(e.Data, 0), packedDataDepth)
	return err == nil
}
