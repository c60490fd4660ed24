package main

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// seqValue is a flag that holds a seq: an integer >= 0, and a message
// that says so (and names the flag) when it is given anything else.
type seqValue int64

func (v *seqValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return errors.New("want a seq, an integer >= 0")
	}
	*v = seqValue(n)
	return nil
}

func (v *seqValue) String() string { return strconv.FormatInt(int64(*v), 10) }
func (v *seqValue) Type() string   { return "seq" }

// seqFlag defines the seq flag name, stored in p (0 until given).
func seqFlag(fl *pflag.FlagSet, p *int64, name, usage string) {
	fl.Var((*seqValue)(p), name, usage)
}

// hintedSeq is a seq flag whose error, for a value that is no number,
// adds hint(value): what the value likely meant.
type hintedSeq struct {
	*seqValue
	hint func(value string) string
}

func (v hintedSeq) Set(s string) error {
	err := v.seqValue.Set(s)
	if _, nerr := strconv.ParseInt(s, 10, 64); err != nil && nerr != nil {
		err = fmt.Errorf("%w %s", err, v.hint(s))
	}
	return err
}

// seqFlagHint is seqFlag with a hint for a value that is no number.
func seqFlagHint(fl *pflag.FlagSet, p *int64, name, usage string, hint func(value string) string) {
	fl.Var(hintedSeq{(*seqValue)(p), hint}, name, usage)
}

// flagError rewrites cobra's and pflag's flag errors as usage errors that
// name the flag, the value and what it wants (`--to "good": want a seq,
// an integer >= 0`), in place of a parser's own words, and suggests the
// nearest flag of cmd for one it does not have.
func flagError(cmd *cobra.Command, err error) error {
	var nee *pflag.NotExistError
	if errors.As(err, &nee) && nee.GetSpecifiedName() != "" {
		var names []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
		if near := nearest(nee.GetSpecifiedName(), names); near != "" {
			err = fmt.Errorf("%w (did you mean --%s?)", err, near)
		}
		return usageError(err)
	}
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) {
		why := errors.Unwrap(ive)
		var ne *strconv.NumError
		if errors.As(why, &ne) {
			why = errors.New("want an integer")
			if ne.Func == "ParseBool" {
				why = errors.New("want true or false")
			}
		}
		err = fmt.Errorf("--%s %q: %w", ive.GetFlag().Name, ive.GetValue(), why)
	}
	return usageError(err)
}
