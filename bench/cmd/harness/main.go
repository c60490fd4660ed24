// Command harness runs sessionlog and the alternatives it is measured
// against on the bench workload, interleaved, and writes the tables into
// the generated section of docs/performance.md (package harness).
//
//	cd bench && go run ./cmd/harness            # five runs, ~7 min; rewrites ../docs/performance.md
//	cd bench && go run ./cmd/harness -long      # 100 MB and 1 GiB sessions too, the 2,000-turn read, logtool on 1 GiB
//	cd bench && go run ./cmd/harness -quick -out -   # one run on small sizes, tables to stdout
//	cd bench && go run ./cmd/harness -tables results/DAY/harness.md   # the tables there, the targets in docs/performance.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/sessionlog/sessionlog/bench/harness"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		childTask = flag.String("child", "", "internal: run one measurement (JSON task) and print its metrics")
		quick     = flag.Bool("quick", false, "one run on small sizes (what CI can afford)")
		long      = flag.Bool("long", false, "add the 100 MB sessions, the 1 GiB session and the 2,000-turn read workload")
		runs      = flag.Int("runs", 0, "interleaved runs (default: the mode's)")
		out       = flag.String("out", "../docs/performance.md", "markdown file whose generated section is replaced; - for stdout")
		work      = flag.String("work", "", "folder for the fixtures and measurements (default: the system's temp folder)")
		only      = flag.String("only", "", "a regexp: measure only the tasks whose key it matches (e.g. 'append/64/|read/')")
		profiles  = flag.String("profiles", "", "folder where each measurement of the last run writes a CPU profile")
		logtool   = flag.String("logtool", "", "the logtool binary the CLI scenario runs (default: built from the library's module)")
		tables    = flag.String("tables", "", "a file for every table; -out then gets the machine and the targets alone")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *childTask != "" {
		return harness.Child(ctx, *childTask, os.Stdout)
	}
	if *quick && *long {
		return errors.New("-quick and -long exclude each other")
	}
	cfg := harness.Standard()
	switch {
	case *quick:
		cfg = harness.Quick()
	case *long:
		cfg = harness.Long()
	}
	if *runs > 0 {
		cfg.Runs = *runs
	}
	cfg.Work, cfg.Progress, cfg.Profiles, cfg.Logtool = *work, os.Stderr, *profiles, *logtool
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fmt.Errorf("-only: %w", err)
		}
		cfg.Only = re
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	res, err := harness.Run(ctx, cfg, exe)
	if err != nil {
		return err
	}
	command := "cd bench && go run ./cmd/harness " + strings.Join(os.Args[1:], " ")
	command = strings.TrimSpace(command)
	md := res.Markdown(command)
	if *tables != "" {
		if err := os.MkdirAll(filepath.Dir(*tables), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*tables, []byte("# Harness tables\n\n"+md), 0o644); err != nil {
			return err
		}
		cite := *tables
		if !filepath.IsAbs(cite) {
			cite = filepath.ToSlash(filepath.Join("bench", cite)) // the command runs in bench/
		}
		md = res.Summary(command, cite)
	}
	if *out == "-" {
		_, err := fmt.Print(md)
		return err
	}
	doc, err := os.ReadFile(*out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	doc, err = harness.ReplaceSection(doc, []byte(md))
	if err != nil {
		return fmt.Errorf("%s: %w", *out, err)
	}
	return os.WriteFile(*out, doc, 0o644)
}
