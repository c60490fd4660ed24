package logfile

import "github.com/sessionlog/sessionlog/eventlog"

// NewHeader returns a version-1 header for the session id, created at
// createdAt (Unix milliseconds).
func NewHeader(id string, createdAt int64) eventlog.Header {
	return eventlog.Header{Format: eventlog.FormatName, Version: eventlog.Version, ID: id, CreatedAt: createdAt}
}

// seqZero is how canon(e) starts when e.Seq is 0.
const seqZero = `{"seq":0`

// AppendCanonTail appends the bytes of canon(e) that follow its seq,
// ,"type":"T","time":MS,"data":D} — what a writer can build of an unpacked
// row before the row's seq is known: canon(e) is {"seq":S then these
// (eventlog.Digest.AddTail hashes them so). They are eventlog.AppendCanon's
// own bytes, so the two cannot disagree.
func AppendCanonTail(dst []byte, e eventlog.Event) []byte {
	start := len(dst)
	e.Seq = 0
	dst = eventlog.AppendCanon(dst, e)
	n := copy(dst[start:], dst[start+len(seqZero):])
	return dst[:start+n]
}
