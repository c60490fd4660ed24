package logfile

import (
	"strconv"

	"github.com/sessionlog/sessionlog/eventlog"
)

// NewHeader returns a version-1 header for the session id, created at
// createdAt (Unix milliseconds).
func NewHeader(id string, createdAt int64) eventlog.Header {
	return eventlog.Header{Format: eventlog.FormatName, Version: eventlog.Version, ID: id, CreatedAt: createdAt}
}

// AppendCanonTail appends the bytes of canon(e) that follow its seq,
// ,"type":"T","time":MS,"data":D} — what a writer can build of an unpacked
// row before the row's seq is known: canon(e) is {"seq":S then these
// (eventlog.Digest.AddTail hashes them so). It spells canon as
// eventlog.AppendCanon does, without the seq, so that the append path
// encodes each event once; TestCanonTail holds the two to the same bytes.
func AppendCanonTail(dst []byte, e eventlog.Event) []byte {
	dst = append(dst, `,"type":"`...)
	dst = append(dst, e.Type...)
	dst = append(dst, `","time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, `,"data":`...)
	if e.Data == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, e.Data...)
	}
	return append(dst, '}')
}
