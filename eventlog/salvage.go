package eventlog

// A salvage read passes over damage in a log, for inspection, and yields
// every event it can decode; it reports what it found in a SalvageResult.

// Skip is a damaged byte range that a salvage read passed over.
type Skip struct {
	// Offset and Bytes locate the range in the file.
	Offset, Bytes int64
	// FirstLost and LastLost are the seqs the range held, as far as the
	// rows around it tell: FirstLost > LastLost when none were lost (a
	// damaged duplicate, say), LastLost is -1 when the damage runs to the
	// end of the file and nothing after it says how far it went.
	FirstLost, LastLost int64
	// Reason is what was wrong at Offset.
	Reason string
}

// SalvageResult is what a salvage read found.
type SalvageResult struct {
	Header Header
	Events int64 // events yielded
	Skips  []Skip
	Torn   *TornTail
}
