package importer

// Undo keeps what a converter's records change of its state (S) as each
// record found it, so that a record the builder drops (a bad record: Drop
// takes back its events) leaves no trace in the state either: the next
// record, and the end of the file, find it as if the record had never
// been read. The converter calls Settle as each record begins, before it
// reads it, and once after the last. Not safe for concurrent use.
type Undo[S any] struct {
	b       *Builder
	records int // records kept before the current one (-1: none begun)
	kept    S
}

// NewUndo returns an Undo for the records of b.
func NewUndo[S any](b *Builder) *Undo[S] { return &Undo[S]{b: b, records: -1} }

// Settle runs as a record begins (inRecord) and after the last record:
// when the builder dropped the record before, restore puts back the state
// as that record found it; then save returns the state as the next record
// finds it (prev is the one saved before, which save may share from).
func (u *Undo[S]) Settle(inRecord bool, save func(prev S) S, restore func(S)) {
	n := u.b.Records() // the records kept, and the one begun
	if inRecord {
		n--
	}
	if n == u.records {
		restore(u.kept)
	}
	u.kept, u.records = save(u.kept), n
}
