package logfile

// ReadHeaderLimit is ReadHeader for a header row of at most limit bytes
// instead of eventlog.MaxRowSize (tests only): the overlong check without
// rows of tens of megabytes.
var ReadHeaderLimit = readHeader
