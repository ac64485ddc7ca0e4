package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// addOutputFlag adds -o/--output, for the commands whose output is a
// document people keep: a report or a simulation page.
func addOutputFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVarP(path, "output", "o", "", "write the output to this file instead of standard output (replaced whole, only once it is complete)")
}

// outputFile is -o's file on its way: written beside its final name and
// renamed onto it when complete, so a failed run leaves the last good
// file, never a part.
type outputFile struct {
	f    *os.File
	w    *bufio.Writer
	path string
}

func createOutput(path string) (*outputFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("-o %s: %w", path, err)
	}
	return &outputFile{f: f, w: bufio.NewWriter(f), path: path}, nil
}

func (o *outputFile) Write(p []byte) (int, error) { return o.w.Write(p) }

// finish keeps the file when err is nil, and drops it otherwise; it
// returns err, or what went wrong keeping it.
func (o *outputFile) finish(err error) error {
	if err == nil {
		err = o.w.Flush()
	}
	if err == nil {
		err = o.f.Chmod(0o644)
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = os.Rename(o.f.Name(), o.path); err != nil {
			err = fmt.Errorf("-o %s: %w", o.path, err)
		}
	}
	if err != nil {
		os.Remove(o.f.Name())
	}
	return err
}

// withOutput runs write with io's output sent to path when it is set; a
// file is no terminal, so tables are not fitted to one.
func withOutput(io *IO, path string, write func(*IO) error) error {
	if path == "" {
		return write(io)
	}
	out, err := createOutput(path)
	if err != nil {
		return err
	}
	fio := *io
	fio.Out, fio.OutWidth, fio.OutIsTTY = out, 0, false
	return out.finish(write(&fio))
}
