package handle

// GCReport says what GC removed (or, in a dry run, would remove).
type GCReport struct {
	// Deleted lists the sessions removed, oldest activity first.
	Deleted []string `json:"deleted"`
	// Kept lists old sessions kept because a newer fork depends on them,
	// or because a writer holds them.
	Kept []string `json:"kept"`
	// Leftovers lists derived and temporary files removed: temp files of
	// interrupted writes, caches of sessions that are gone.
	Leftovers []string `json:"leftovers"`
}
