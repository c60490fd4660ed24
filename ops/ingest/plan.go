package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/sessionlog/sessionlog/handle/file"
	"github.com/sessionlog/sessionlog/importer"
	"github.com/sessionlog/sessionlog/secrets/seal"
)

// source is one source file of a plan: its path, size and modification
// time, whether it was named by the caller (not found in a folder), and
// the argument it was named by or found under (a sub-session's: its
// parent file's folder).
type source struct {
	path  string
	size  int64
	mtime time.Time
	named bool
	arg   string
}

// unit is the files imported together: a file, then the files of its
// sub-sessions (Claude Code's subagents). err, when set, is why the unit
// fails before anything is read (no such path, no format recognised).
type unit struct {
	format string
	files  []source
	err    error
}

// plan is what an Import will do.
type plan struct {
	units []unit
	files int
	bytes int64
}

// ErrUnknownFormat is wrapped by the error of a file no format recognises.
var ErrUnknownFormat = errors.New("ingest: unknown format")

// ErrAmbiguous is wrapped by the error of a file more than one format
// recognises.
var ErrAmbiguous = errors.New("ingest: ambiguous format")

// zstdMagic starts a zstd frame: a sessionlog log in zstd frames.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// sniffSessionlog reports whether head starts a sessionlog log, clear or
// sealed (docs/format.md §11).
func sniffSessionlog(head []byte) bool {
	if bytes.HasPrefix(head, zstdMagic) {
		return true
	}
	if _, sealed := seal.IsSealed(head); sealed {
		return true
	}
	m, ok := importer.Head(head)
	return ok && importer.HeadString(m, "format") == Sessionlog
}

// matchSessionlog reports whether a file met in a folder may be a
// sessionlog log, by its name.
func matchSessionlog(path string) bool {
	return strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".jsonl.zst")
}

// Detect returns the format of the file at path, found by its content:
// Sessionlog or the name of one of reg's formats. A file none recognises
// is an ErrUnknownFormat error, one several do an ErrAmbiguous one; both
// name the formats tried.
func Detect(fsys afero.Fs, path string, reg *importer.Registry) (string, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, importer.SniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return detect(head[:n], reg, path)
}

func detect(head []byte, reg *importer.Registry, path string) (string, error) {
	var found []string
	if sniffSessionlog(head) {
		found = append(found, Sessionlog)
	}
	for _, imp := range reg.Sniff(head) {
		found = append(found, imp.Name())
	}
	tried := strings.Join(append([]string{Sessionlog}, reg.Names()...), ", ")
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%w: %s is none of the formats tried (%s, by their content); pass --from FORMAT to read it as one", ErrUnknownFormat, path, tried)
	}
	return "", fmt.Errorf("%w: %s could be %s (tried %s); pass --from FORMAT to say which", ErrAmbiguous, path, strings.Join(found, " or "), tried)
}

// planOf turns the paths into units: a file is a unit (with its
// sub-sessions); a folder is walked recursively, in path order, for the
// files whose names a format's files have; each file once. A path that
// gives nothing to import (there is none, it is no file or folder, it
// holds no file of the format) is a unit that fails with the reason, and
// the others are planned all the same.
func planOf(ctx context.Context, cfg *config, paths []string) (plan, error) {
	var files []source
	var errs []error
	seen := map[string]bool{}
	for _, p := range paths {
		found, err := argFiles(ctx, cfg, p)
		if err != nil {
			if ctx.Err() != nil {
				return plan{}, ctx.Err()
			}
			files, errs = append(files, source{path: p, named: true, arg: p}), append(errs, err)
			continue
		}
		for _, f := range found {
			if c := filepath.Clean(f.path); !seen[c] {
				seen[c] = true
				files, errs = append(files, f), append(errs, nil)
			}
		}
	}
	var pl plan
	var formats []string
	for i, f := range files {
		pl.files++
		pl.bytes += f.size
		format, err := cfg.from, errs[i]
		if format == "" && err == nil {
			format, err = Detect(cfg.fs, f.path, cfg.reg)
		}
		formats = append(formats, format)
		pl.units = append(pl.units, unit{format: format, files: []source{f}, err: err})
	}
	return group(cfg, pl, formats)
}

// argFiles are the files the path argument p names: itself, or the files
// to import under it; an *ArgError says why it names none.
func argFiles(ctx context.Context, cfg *config, p string) ([]source, error) {
	fi, err := cfg.fs.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &ArgError{Path: p, Reason: "no such file or folder", Err: fs.ErrNotExist}
	case err != nil:
		return nil, &ArgError{Path: p, Reason: err.Error(), Err: err}
	case fi.Mode().IsRegular():
		return []source{{path: p, size: fi.Size(), mtime: fi.ModTime(), named: true, arg: p}}, nil
	case fi.IsDir():
		found, err := walk(ctx, cfg, p)
		if err != nil {
			return nil, &ArgError{Path: p, Reason: "walking it: " + err.Error(), Err: err}
		}
		if len(found) == 0 {
			return nil, &ArgError{Path: p, Reason: fmt.Sprintf("no file to import in it (%s)", wanted(cfg))}
		}
		return found, nil
	}
	// Never opened: a FIFO's open would block, a device be endless.
	return nil, &ArgError{Path: p, Reason: fmt.Sprintf("refused, not a regular file or a folder (mode %s)", fi.Mode().Type()), Err: file.ErrNotRegular}
}

// ArgError is why a path Import was given gives nothing to import: there
// is none (Err fs.ErrNotExist), it is no file or folder (Err
// file.ErrNotRegular), it holds no file of the format, or it could not
// be walked. Its Result is Failed, and the other paths are imported.
type ArgError struct {
	Path, Reason string
	Err          error // nil for a folder without a file to import
}

func (e *ArgError) Error() string { return e.Path + ": " + e.Reason }
func (e *ArgError) Unwrap() error { return e.Err }

// wanted says which file names a folder walk takes.
func wanted(cfg *config) string {
	switch cfg.from {
	case Sessionlog:
		return "*.jsonl, *.jsonl.zst"
	case "":
		return "*.jsonl, *.jsonl.zst, *.traj"
	}
	imp, _ := cfg.reg.Lookup(cfg.from)
	return "the files of " + imp.Name()
}

// walk returns the regular files under dir whose names may be of the
// format asked for (any format when none is), in path order.
func walk(ctx context.Context, cfg *config, dir string) ([]source, error) {
	match := func(p string) bool {
		switch cfg.from {
		case Sessionlog:
			return matchSessionlog(p)
		case "":
			if matchSessionlog(p) {
				return true
			}
			for _, name := range cfg.reg.Names() {
				if imp, _ := cfg.reg.Lookup(name); imp.Match(p) {
					return true
				}
			}
			return false
		}
		imp, _ := cfg.reg.Lookup(cfg.from)
		return imp.Match(p)
	}
	var out []source
	err := afero.Walk(cfg.fs, dir, func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if info.Mode().IsRegular() && match(p) {
			out = append(out, source{path: p, size: info.Size(), mtime: info.ModTime(), arg: dir})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b source) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// group makes each file's sub-sessions part of its unit: those the plan
// holds go with it (and are no unit of their own); a file named by the
// caller brings all of them.
func group(cfg *config, pl plan, formats []string) (plan, error) {
	index := map[string]int{} // path → its unit
	for i, u := range pl.units {
		index[filepath.Clean(u.files[0].path)] = i
	}
	taken := make([]bool, len(pl.units))
	kids := make([][]source, len(pl.units))
	for i, u := range pl.units {
		if u.err != nil || u.format == Sessionlog || taken[i] {
			continue
		}
		imp, err := cfg.reg.Lookup(u.format)
		if err != nil {
			return plan{}, err
		}
		paths, err := imp.Children(cfg.fs, u.files[0].path)
		if err != nil {
			return plan{}, err
		}
		for _, k := range paths {
			j, planned := index[filepath.Clean(k)]
			switch {
			case planned && j != i && !taken[j] && formats[j] == u.format:
				taken[j] = true
				kids[i] = append(kids[i], pl.units[j].files[0])
			case !planned && u.files[0].named:
				fi, err := cfg.fs.Stat(k)
				if err != nil || !fi.Mode().IsRegular() {
					continue
				}
				pl.files++
				pl.bytes += fi.Size()
				kids[i] = append(kids[i], source{path: k, size: fi.Size(), mtime: fi.ModTime(), arg: filepath.Dir(u.files[0].path)})
			}
		}
	}
	var units []unit
	for i, u := range pl.units {
		if taken[i] {
			continue
		}
		u.files = append(u.files, kids[i]...)
		units = append(units, u)
	}
	pl.units = units
	return pl, nil
}
