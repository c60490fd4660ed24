package recorder

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/replay"
)

// factsKey is the derived-cache key of a session's facts record: the stop
// facts of the live branch that ends at one event, so that ReadFacts need
// not walk back past it again. Derived: missing, damaged or stale, it
// costs one longer walk, never a wrong answer.
const factsKey = "facts"

// factsRecordAfter is how many windows a walk reads before it leaves a
// record: a session whose last turn/end is near its end needs none.
const factsRecordAfter = 4

// factsRecord is the data of a factsKey file.
type factsRecord struct {
	Seq   int64  `json:"seq"`   // the event the facts end at
	Event string `json:"event"` // hex sha256 of its canonical bytes
	// Marker: a turn/start or turn/end is on the live branch up to it;
	// OpenTurn and Stop are the facts there.
	Marker   bool  `json:"marker"`
	OpenTurn bool  `json:"openTurn"`
	Stop     *Stop `json:"stop"`
}

// eventSum is the hex sha256 of e's canonical bytes.
func eventSum(e eventlog.Event) string {
	sum := sha256.Sum256(eventlog.AppendCanon(nil, e))
	return hex.EncodeToString(sum[:])
}

// matches reports whether e is the event rec was taken at: the log is
// append-only, so the same event at the same seq ends the same prefix (a
// repair, which cuts a log, drops the session's derived files).
func (rec factsRecord) matches(e eventlog.Event) bool { return eventSum(e) == rec.Event }

// loadFactsRecord returns src's facts record, when cache holds a well
// formed one.
func loadFactsRecord(ctx context.Context, src Source, cache replay.Cache) (factsRecord, bool) {
	var rec factsRecord
	if cache == nil {
		return rec, false
	}
	b, err := cache.GetDerived(ctx, src.ID(), factsKey)
	if err != nil {
		return rec, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if d.Decode(&rec) != nil || rec.Seq < 0 || len(rec.Event) != 2*sha256.Size || rec.Stop != nil && !rec.Marker {
		return rec, false
	}
	return rec, true
}

// saveFactsRecord keeps the facts of the live branch ending at e; a
// failure (a read-only store) only costs a later walk its length.
func saveFactsRecord(ctx context.Context, id string, cache replay.Cache, e eventlog.Event, f Facts, marker bool) {
	b, _ := json.Marshal(factsRecord{Seq: e.Seq, Event: eventSum(e), Marker: marker, OpenTurn: f.OpenTurn, Stop: f.Stop})
	_ = cache.PutDerived(ctx, id, factsKey, b)
}
