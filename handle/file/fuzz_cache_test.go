package file_test

// Fuzz targets of the decoders in package handle that read bytes they did
// not just produce: file names (ParseFileName, and the names GC sweeps),
// and the derived files of a store's .cache folder (the headers index,
// the saved digest states, derived entries by key). Derived files are a
// cache: whatever bytes such a file holds, every answer is the one a store
// without it gives. (Log files: fuzz_log_test.go.)

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/checkpoint"
	"github.com/sessionlog/sessionlog/eventlog"
	"github.com/sessionlog/sessionlog/handle"
	"github.com/sessionlog/sessionlog/handle/file"
)

// A name ParseFileName accepts is <ID>.jsonl or <ID>.jsonl.zst for a valid
// ID, and names the file the store keeps that session in; no other name
// is accepted.
func FuzzParseFileName(f *testing.F) {
	for _, name := range []string{
		linP + ".jsonl", linP + ".jsonl.zst", linP + ".lock", linP + ".jsonl.tmp", linP + ".jsonl.zst.tmp",
		linP, ".jsonl", ".jsonl.zst", strings.ToLower(linP) + ".jsonl", "81JDX3N0Q3Z8Y6W2D1V5K7M9P0.jsonl",
		linP + linP + ".jsonl", linP + ".jsonl.jsonl", linP + ".jsonl.zst.zst", "x/" + linP + ".jsonl",
		"01JDX3N0Q3Z8Y6W2D1V5K7M9PU.jsonl", linP + ".JSONL", linP + ".zst", linP + ".jsonl\x00",
	} {
		f.Add(name)
	}
	store := file.New(afero.NewMemMapFs(), crashDir)
	f.Fuzz(func(t *testing.T, name string) {
		id, enc, ok := file.ParseFileName(name)
		if !ok {
			require.Empty(t, id)
			require.Empty(t, enc)
			// No valid ID followed by a log file's ending.
			if len(name) >= 26 && eventlog.ValidID(name[:26]) {
				require.NotContains(t, []string{".jsonl", ".jsonl.zst"}, name[26:])
			}
			return
		}
		require.True(t, eventlog.ValidID(id), "%q", id)
		ext := map[string]string{handle.EncodingRaw: ".jsonl", handle.EncodingZstd: ".jsonl.zst"}[enc]
		require.NotEmpty(t, ext, "encoding %q", enc)
		require.Equal(t, name, id+ext, "the name round trips")
		require.Equal(t, enc, file.EncodingOfPath(name))
		if enc == handle.EncodingRaw {
			p, err := store.Path(id)
			require.NoError(t, err)
			require.Equal(t, filepath.Join(crashDir, name), p)
		}
	})
}

// headersIndexPath is the derived index of headers in the lineage store.
var headersIndexPath = filepath.Join(crashDir, ".cache", "headers.json")

// treeAnswers is every answer a store gives from session headers.
type treeAnswers struct {
	Roots      []*handle.Node
	Children   map[string][]eventlog.Header
	Ancestors  map[string][]eventlog.Header
	Gone       map[string]string
	Dependents map[string][]string // by a refused Delete
}

// answersOf asks st every question answered from headers, about the
// sessions of the lineage fixture.
func answersOf(t testing.TB, st *file.Store) treeAnswers {
	t.Helper()
	ctx := t.Context()
	a := treeAnswers{Children: map[string][]eventlog.Header{}, Ancestors: map[string][]eventlog.Header{},
		Gone: map[string]string{}, Dependents: map[string][]string{}}
	var err error
	a.Roots, err = st.Tree(ctx)
	require.NoError(t, err)
	for _, id := range linIDs {
		a.Children[id], err = st.Children(ctx, id)
		require.NoError(t, err)
		a.Ancestors[id], a.Gone[id], err = st.Ancestors(ctx, id)
		require.NoError(t, err)
	}
	for _, id := range []string{linP, linF} {
		var de *handle.DependentsError
		require.ErrorAs(t, st.Delete(ctx, id), &de, "%s has forks: Delete must refuse", id)
		a.Dependents[id] = de.Dependents
	}
	return a
}

// payloadOf returns the data of a derived file: what follows its sum line.
func payloadOf(fileb []byte) []byte {
	_, data, ok := strings.Cut(string(fileb), "\n")
	if !ok {
		panic("not a derived file: " + string(fileb))
	}
	return []byte(data)
}

// Whatever the headers index holds, tree queries (and the forks Delete
// protects) are those of a store without it, and the next query leaves
// the index a store without it would write. The fuzzed bytes are tried as
// the file, and as the data of a file whose sum matches: its entries are
// trusted only when they name their file's size and modification time,
// which the fuzzer cannot guess.
func FuzzHeadersIndex(f *testing.F) {
	l := newLineage(f, handle.EncodingRaw)
	clean := file.New(l.fresh(), crashDir)
	_, err := clean.Fs().Stat(headersIndexPath)
	require.ErrorIs(f, err, fs.ErrNotExist, "the fixture has no index")
	want := answersOf(f, clean)
	require.Len(f, want.Roots, 2)
	require.Equal(f, []string{linF, linF2}, want.Dependents[linP])
	fileb, err := afero.ReadFile(clean.Fs(), headersIndexPath)
	require.NoError(f, err)
	index := payloadOf(fileb) // the keys of another copy: same names and sizes, other times
	for _, s := range []string{string(fileb), string(index), "", "null", "[]", "{}", "[null]",
		`[{"name":"` + linP + `.jsonl"}]`, `[{"name":"` + linF + `.jsonl","size":-1,"mtime":0,"header":{"id":"` + linP + `"}}]`,
		strings.Replace(string(index), `"parent"`, `"Parent"`, 1), string(index[:len(index)/2])} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	// Every input runs on the files of one other copy of the fixture (the
	// fuzzed index is the only file it changes; a fresh copy per input, and
	// a third round of queries to rebuild the index from scratch, ran 1,000
	// inputs a minute): fromScratch is what a store without an index writes
	// there. Its times are not those of the seeds'.
	fsys := l.fresh()
	answersOf(f, file.New(fsys, crashDir))
	fromScratch, err := afero.ReadFile(fsys, headersIndexPath)
	require.NoError(f, err)
	require.NotEqual(f, string(fileb), string(fromScratch), "another copy, other times")
	f.Fuzz(func(t *testing.T, index []byte, sealed bool) {
		if sealed {
			index = file.SealDerived(index)
		}
		require.NoError(t, afero.WriteFile(fsys, headersIndexPath, index, 0o600))
		st := file.New(fsys, crashDir)
		require.Equal(t, want, answersOf(t, st))
		rebuilt, err := afero.ReadFile(fsys, headersIndexPath)
		require.NoError(t, err)
		require.Equal(t, string(fromScratch), string(rebuilt), "the index is rebuilt")
	})
}

// logDigest computes the log digest of evs from the first event.
func logDigest(evs []eventlog.Event) (string, int64) {
	d := eventlog.NewDigest()
	for _, e := range evs {
		d.Add(e)
	}
	return d.String(), d.Next()
}

// digestPath is where session id's digest state is saved.
func digestPath(id string) string { return filepath.Join(crashDir, ".cache", id+".digest") }

// digestSessions are the sessions whose saved digest state is fuzzed: a
// root, a fork, a fork in the other encoding, a fork of a fork.
var digestSessions = []string{linP, linF, linF2, linG}

// requireLogDigest checks that h's LogDigest is the one computed from its
// log by the definition.
func requireLogDigest(t testing.TB, h handle.Handle) {
	t.Helper()
	wantDigest, wantNext := logDigest(readWholeLog(t, h))
	got, next, err := h.LogDigest(t.Context())
	require.NoError(t, err)
	require.Equal(t, wantDigest, got, h.ID())
	require.Equal(t, wantNext, next, h.ID())
}

// Whatever the file of a session's saved digest state holds, LogDigest
// is the digest of the log from the first event (read-only and write
// handles), a checkpoint appended after it verifies, and the state saved
// on close is right.
//
// The fuzzed bytes are also tried as the data of a file whose sum
// matches. Such a state is trusted when the event before its seq is the
// one it names, as documented (the sum detects damage, not forgery), so
// there LogDigest may be wrong; but it never fails nor panics, its next
// seq is right, appends and checkpoints go on, and the log is untouched.
func FuzzSavedDigest(f *testing.F) {
	l := newLineage(f, handle.EncodingRaw)
	// Seeds: the states saved by writers of the fixture, and one saved by a
	// writer of a log that is a prefix of linP's (4 of its 10 events); as
	// files, and as data.
	fsys := l.fresh()
	st := file.New(fsys, crashDir)
	var files [][]byte
	for _, id := range digestSessions {
		h, err := st.Open(f.Context(), id, handle.ReadWrite)
		require.NoError(f, err)
		requireLogDigest(f, h)
		require.NoError(f, h.Close())
		b, err := afero.ReadFile(fsys, digestPath(id))
		require.NoError(f, err)
		files = append(files, b)
	}
	prefix := file.New(afero.NewMemMapFs(), crashDir)
	h, err := prefix.Create(f.Context(), handle.WithID(linP))
	require.NoError(f, err)
	growLog(f, h, "", 4)
	require.Equal(f, canonLines(l.logs[linP][:4]), canonLines(readWholeLog(f, h)))
	requireLogDigest(f, h)
	require.NoError(f, h.Close())
	b, err := afero.ReadFile(prefix.Fs(), digestPath(linP))
	require.NoError(f, err)
	for i, fileb := range append(files, b) {
		id := uint8(i % len(digestSessions))
		for _, sealed := range []bool{false, true} {
			f.Add(fileb, id, sealed)
			f.Add(payloadOf(fileb), id, sealed)
		}
	}
	for i, s := range []string{"", "null", "{}", `{"next":1}`, `{"next":1,"last":"","state":null}`,
		`{"next":-1,"state":{"next":-1,"sha256":""}}`, `{"next":99999999999,"last":"x","state":{}}`} {
		f.Add([]byte(s), uint8(i), i%2 == 0)
	}

	// One session and one way of storing the bytes per input (the fuzzer
	// picks them): every input tried on each of the four sessions, sealed
	// and not, ran 200 inputs a minute; the log each run starts from is a
	// copy of the fixture taken once.
	f.Fuzz(func(t *testing.T, saved []byte, session uint8, sealed bool) {
		ctx := t.Context()
		id := digestSessions[int(session)%len(digestSessions)]
		fileb, check := saved, requireLogDigest
		if sealed {
			fileb = file.SealDerived(saved)
			check = func(t testing.TB, h handle.Handle) {
				t.Helper()
				_, next, err := h.LogDigest(ctx)
				require.NoError(t, err)
				require.Equal(t, h.Seq()+1, next)
			}
		}
		fsys := l.fresh()
		require.NoError(t, fsys.MkdirAll(filepath.Join(crashDir, ".cache"), 0o700))
		st := file.New(fsys, crashDir)
		require.NoError(t, afero.WriteFile(fsys, digestPath(id), fileb, 0o600))
		r, err := st.Open(ctx, id, handle.ReadOnly)
		require.NoError(t, err)
		check(t, r)
		require.NoError(t, r.Close())

		w, err := st.Open(ctx, id, handle.ReadWrite)
		require.NoError(t, err)
		check(t, w)
		growLog(t, w, "after", 2)
		addCheckpoint(t, w)
		check(t, w)
		require.NoError(t, w.Close())

		r, err = st.Open(ctx, id, handle.ReadOnly)
		require.NoError(t, err)
		check(t, r) // from the state the writer saved
		log := readWholeLog(t, r)
		require.Len(t, log, len(l.logs[id])+3, id)
		require.Equal(t, canonLines(l.logs[id]), canonLines(log[:len(l.logs[id])]), id)
		if !sealed {
			res, err := checkpoint.Verify(ctx, r)
			require.NoError(t, err)
			require.Equal(t, l.checkpoints[id]+1, res.Verified, id)
		}
		require.NoError(t, r.Close())
	})
}

// Derived data is kept under any valid key, in the store's cache folder
// only, as <ID>.<key>, reads back as written, and goes with DeleteDerived
// or with its session; an invalid ID or key is refused before any file
// is touched. Bytes that are not a file PutDerived wrote read as absent.
func FuzzDerived(f *testing.F) {
	for _, s := range []struct{ id, key string }{
		{linP, "digest"}, {linP, "snap-agent-v1_transcript-v1-42"}, {linP, "snaps-agent-v1"},
		{linP, ""}, {linP, "."}, {linP, ".."}, {linP, "../x"}, {linP, "a/b"}, {linP, "a.tmp"}, {linP, "*"},
		{linP, "a\x00"}, {linP, strings.Repeat("k", 128)}, {linP, strings.Repeat("k", 129)},
		{"../" + linP, "digest"}, {strings.ToLower(linP), "digest"}, {"", "digest"},
	} {
		f.Add(s.id, s.key, []byte("data"))
	}
	f.Add(linP, "k", file.SealDerived([]byte("data")))
	f.Add(linP, "k", file.SealDerived(nil))
	f.Add(linP, "k", []byte("sha256:\n"))
	f.Fuzz(func(t *testing.T, id, key string, data []byte) {
		ctx := t.Context()
		fsys := afero.NewMemMapFs()
		st := file.New(fsys, crashDir)
		valid := eventlog.ValidID(id)
		if valid {
			h, err := st.Create(ctx, handle.WithID(id))
			require.NoError(t, err)
			require.NoError(t, h.Close())
		}
		before := filesIn(t, fsys)
		err := st.PutDerived(ctx, id, key, data)
		if err != nil {
			require.Equal(t, before, filesIn(t, fsys), "a refused key touches no file")
			_, gerr := st.GetDerived(ctx, id, key)
			require.Error(t, gerr)
			require.NotErrorIs(t, gerr, handle.ErrNotFound)
			require.Error(t, st.DeleteDerived(ctx, id, key))
			return
		}
		require.True(t, valid, "an invalid ID is refused")
		want := filepath.Join(crashDir, ".cache", id+"."+key)
		after := append(slices.Clone(before), want)
		if !slices.Contains([]string{"acked", "checked", "digest", "digests"}, key) {
			after = append(after, filepath.Join(crashDir, ".cache", id+".keys")) // the record of its keys
		}
		slices.Sort(after)
		require.Equal(t, after, filesIn(t, fsys), "one file, named after the session and key (and the record of keys)")
		got, err := st.GetDerived(ctx, id, key)
		require.NoError(t, err)
		require.Equal(t, string(data), string(got))

		require.NoError(t, st.DeleteDerived(ctx, id, key))
		_, err = st.GetDerived(ctx, id, key)
		require.ErrorIs(t, err, handle.ErrNotFound)
		require.NoError(t, st.DeleteDerived(ctx, id, key), "deleting nothing is no error")

		// The same bytes as the file: read back only if they are a file
		// PutDerived could have written.
		require.NoError(t, afero.WriteFile(fsys, want, data, 0o600))
		got, err = st.GetDerived(ctx, id, key)
		if err == nil {
			require.Equal(t, string(data), string(file.SealDerived(got)))
		} else {
			require.ErrorIs(t, err, handle.ErrNotFound)
		}

		require.NoError(t, st.PutDerived(ctx, id, key, data))
		require.NoError(t, st.Delete(ctx, id))
		_, err = st.GetDerived(ctx, id, key)
		require.ErrorIs(t, err, handle.ErrNotFound, "derived data goes with its session")
	})
}

// filesIn lists the files of fsys, sorted.
func filesIn(t testing.TB, fsys afero.Fs) []string {
	t.Helper()
	var out []string
	err := afero.Walk(fsys, "/", func(p string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	slices.Sort(out)
	return out
}

// A derived file damaged in a way that keeps it well formed (one
// character of a hash state, of a parent ID whose entry still names its
// file's size and time, of a stored value) is ignored, not trusted.
func TestDamagedDerivedFilesAreIgnored(t *testing.T) {
	l := newLineage(t, handle.EncodingRaw)
	want := answersOf(t, file.New(l.fresh(), crashDir))
	damage := func(t *testing.T, fsys afero.Fs, path, old, new string) {
		t.Helper()
		b, err := afero.ReadFile(fsys, path)
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(string(b), old), "%s in %s", old, b)
		require.NoError(t, afero.WriteFile(fsys, path, []byte(strings.Replace(string(b), old, new, 1)), 0o600))
	}
	t.Run("digest state", func(t *testing.T) {
		fsys := l.fresh()
		st := file.New(fsys, crashDir)
		h, err := st.Open(t.Context(), linP, handle.ReadWrite)
		require.NoError(t, err)
		requireLogDigest(t, h)
		require.NoError(t, h.Close())
		damage(t, fsys, digestPath(linP), "R1BZ", "R0BZ") // inside the sha256 state
		h, err = st.Open(t.Context(), linP, handle.ReadOnly)
		require.NoError(t, err)
		defer h.Close()
		requireLogDigest(t, h)
	})
	t.Run("headers index", func(t *testing.T) {
		fsys := l.fresh()
		st := file.New(fsys, crashDir)
		answersOf(t, st) // writes the index
		// linF's entry still names its file's size and time, but makes it a
		// child of linP: Delete would no longer see that it depends on linP.
		damage(t, fsys, headersIndexPath, `"seq":7,"mode":"fork"`, `"seq":7,"mode":"child"`)
		require.Equal(t, want, answersOf(t, st))
	})
	t.Run("derived entry", func(t *testing.T) {
		fsys := l.fresh()
		st := file.New(fsys, crashDir)
		require.NoError(t, st.PutDerived(t.Context(), linP, "k", []byte(`{"n":12345}`)))
		damage(t, fsys, filepath.Join(crashDir, ".cache", linP+".k"), "12345", "12346")
		_, err := st.GetDerived(t.Context(), linP, "k")
		require.ErrorIs(t, err, handle.ErrNotFound)
	})
}

// GC reads the names in a store's folder and in its cache folder: whatever
// a stray file's name, GC removes only leftovers (temp files, and files of
// sessions that are not in the store), never a live session's log or
// derived data; a dry run removes nothing and reports the same; every
// file removed is reported.
func FuzzGCNames(f *testing.F) {
	for _, name := range []string{"x", linP + ".jsonl.tmp", linP + ".lock", linN + ".lock", linN + ".digest",
		linP + ".digest.tmp", linN + ".jsonl", linN + ".jsonl.zst.tmp", "headers.json.123.tmp", ".tmp", "..", linP + "..k",
		strings.ToLower(linN) + ".k", linN} {
		f.Add(name, false)
		f.Add(name, true)
	}
	f.Fuzz(func(t *testing.T, name string, inCache bool) {
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
			return // not a name in a folder
		}
		ctx := t.Context()
		fsys := afero.NewMemMapFs()
		st := file.New(fsys, crashDir)
		h, err := st.Create(ctx, handle.WithID(linP))
		require.NoError(t, err)
		appendAndFlush(t, h, crashEvents(0, 3)...)
		require.NoError(t, h.Close())
		require.NoError(t, st.PutDerived(ctx, linP, "k", []byte("kept")))
		_, err = st.Tree(ctx)
		require.NoError(t, err)
		_, err = st.List(ctx) // the session index, derived, is written by reads
		require.NoError(t, err)
		log, err := afero.ReadFile(fsys, h.Path())
		require.NoError(t, err)

		dir := crashDir
		if inCache {
			dir = filepath.Join(crashDir, ".cache")
		}
		stray := filepath.Join(dir, name)
		if _, err := fsys.Stat(stray); err == nil {
			return // a file of the store
		}
		require.NoError(t, afero.WriteFile(fsys, stray, []byte("stray"), 0o600))
		before := filesIn(t, fsys)

		dry, err := st.GC(ctx, time.UnixMilli(0), true)
		require.NoError(t, err)
		require.Equal(t, before, filesIn(t, fsys), "a dry run removes nothing")
		rep, err := st.GC(ctx, time.UnixMilli(0), false)
		require.NoError(t, err)
		require.Equal(t, dry, rep)
		require.Empty(t, rep.Deleted, "no session is old")
		after := filesIn(t, fsys)
		removed := slices.DeleteFunc(slices.Clone(before), func(p string) bool {
			// The index's marks (sessions.d) are its own: GC's sweep
			// removes the marks that owed it.
			return slices.Contains(after, p) || strings.Contains(p, "/.cache/sessions.d/")
		})
		require.ElementsMatch(t, removed, rep.Leftovers, "every file removed is reported")
		for _, p := range removed {
			require.Equal(t, stray, p, "only the stray file may go")
			id, _, _ := strings.Cut(name, ".")
			require.True(t, strings.HasSuffix(name, ".tmp") || (eventlog.ValidID(id) && id != linP),
				"%q is neither a temp file nor a file of a session that is gone", name)
		}

		got, err := afero.ReadFile(fsys, h.Path())
		require.NoError(t, err)
		require.Equal(t, log, got)
		kept, err := st.GetDerived(ctx, linP, "k")
		require.NoError(t, err)
		require.Equal(t, "kept", string(kept))
	})
}

// FuzzCheckedRecord: whatever bytes a session's checked record holds, as
// a file or as the data of a sealed one, opening the session for reading
// and for writing, reading it, its Stat and the record the writer leaves
// are what a store without the record gives. (A record trusted without a
// read names its file's exact identity, which these bytes cannot: the
// log is written anew for each input; the property test covers records
// that match.)
func FuzzCheckedRecord(f *testing.F) {
	type fixture struct {
		log  []byte
		path string
		evs  []eventlog.Event
		info handle.Info
		id   string
		enc  string
	}
	var fixtures []fixture
	for _, enc := range []string{handle.EncodingRaw, handle.EncodingZstd} {
		st := file.New(afero.NewMemMapFs(), crashDir, handle.WithEncoding(enc))
		h, err := st.Create(f.Context())
		require.NoError(f, err)
		var evs []eventlog.Event
		for i := range 30 {
			e := bigEvent(i)
			e.Seq, err = h.Append(f.Context(), e)
			require.NoError(f, err)
			evs = append(evs, e)
			if i%7 == 0 {
				require.NoError(f, h.Flush(f.Context()))
			}
		}
		require.NoError(f, h.Close())
		p, err := st.Path(h.ID())
		require.NoError(f, err)
		log, err := afero.ReadFile(st.Fs(), p)
		require.NoError(f, err)
		info, err := st.Stat(f.Context(), h.ID())
		require.NoError(f, err)
		rec, err := afero.ReadFile(st.Fs(), filepath.Join(crashDir, ".cache", h.ID()+".checked"))
		require.NoError(f, err)
		fixtures = append(fixtures, fixture{log: log, path: p, evs: evs, info: info, id: h.ID(), enc: enc})
		for _, sealed := range []bool{false, true} {
			f.Add(rec, uint8(len(fixtures)-1), sealed)
			f.Add(payloadOf(rec), uint8(len(fixtures)-1), sealed)
		}
	}
	for i, s := range []string{"", "null", "{}", `{"file":{"size":1,"mtime":0},"tail":"","next":0,"lastFrame":[0,0],"index":[[1,0]]}`,
		`{"file":{"size":-1},"next":-5,"index":[[0,0],[0,0]]}`, `{"next":99999999999,"index":[],"extra":1}`} {
		f.Add([]byte(s), uint8(i), i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, rec []byte, which uint8, sealed bool) {
		ctx := t.Context()
		fx := fixtures[int(which)%len(fixtures)]
		fsys := afero.NewMemMapFs()
		st := file.New(fsys, crashDir, handle.WithEncoding(fx.enc))
		require.NoError(t, afero.WriteFile(fsys, fx.path, fx.log, 0o600))
		require.NoError(t, fsys.MkdirAll(filepath.Join(crashDir, ".cache"), 0o700))
		if sealed {
			rec = file.SealDerived(rec)
		}
		require.NoError(t, afero.WriteFile(fsys, filepath.Join(crashDir, ".cache", fx.id+".checked"), rec, 0o600))

		info, err := st.Stat(ctx, fx.id)
		require.NoError(t, err)
		require.Equal(t, fx.info, info)
		for _, mode := range []handle.Mode{handle.ReadOnly, handle.ReadWrite} {
			h, err := st.Open(ctx, fx.id, mode)
			require.NoError(t, err)
			require.Equal(t, int64(len(fx.evs)-1), h.Seq())
			require.Equal(t, canonLines(fx.evs), canonLines(readWholeLog(t, h)))
			require.NoError(t, h.Close())
		}
		ok, err := file.CheckedRecord(ctx, st, fx.id)
		require.NoError(t, err)
		require.True(t, ok, "the writer left a record of the file as it is")
	})
}
