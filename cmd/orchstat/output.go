package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/reports/render"
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
		return nil, outputError(path, err)
	}
	return &outputFile{f: f, w: bufio.NewWriter(f), path: path}, nil
}

func (o *outputFile) Write(p []byte) (int, error) { return o.w.Write(p) }

// finish keeps the file when err is nil, and drops it otherwise; it
// returns err, or what went wrong keeping it.
func (o *outputFile) finish(err error) error {
	var ferr error // the file's own, named as the user named it
	if err == nil {
		ferr = o.w.Flush()
	}
	if err == nil && ferr == nil {
		ferr = o.f.Chmod(0o644)
	}
	if cerr := o.f.Close(); err == nil && ferr == nil {
		ferr = cerr
	}
	if err == nil && ferr == nil {
		ferr = os.Rename(o.f.Name(), o.path)
	}
	if err == nil && ferr != nil {
		err = outputError(o.path, ferr)
	}
	if err != nil {
		os.Remove(o.f.Name())
	}
	return err
}

// outputError is err, met writing -o path, named by path: the temporary
// file beside it (.report.html.919825484.tmp) is orchstat's business, not
// the user's.
func outputError(path string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	if _, serr := os.Stat(filepath.Dir(path)); errors.Is(err, fs.ErrNotExist) && errors.Is(serr, fs.ErrNotExist) {
		return fmt.Errorf("-o %s: the folder %s does not exist", path, filepath.Dir(path))
	}
	return fmt.Errorf("-o %s: %w", path, err)
}

// withOutput runs write with io's output sent to path when it is set; a
// file is no terminal, so tables are not fitted to one. Unless io.Quiet,
// it then says on stderr what it wrote ("wrote report.html, 80 KB"), as
// nothing else shows that the command did anything.
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
	if err := out.finish(write(&fio)); err != nil {
		return err
	}
	if !io.Quiet {
		if fi, err := os.Stat(path); err == nil {
			fmt.Fprintf(io.Err, "wrote %s, %s\n", path, render.SizeText(fi.Size()))
		}
	}
	return nil
}

// refuseHTMLAtTerminal is a usage error for --format html with standard
// output a terminal and no -o: a page of HTML is for a browser, and
// scrolled past on a terminal it only hides what came before.
func refuseHTMLAtTerminal(cmd *cobra.Command, io *IO) error {
	format, output := cmd.Flags().Lookup("format"), cmd.Flags().Lookup("output")
	if !io.OutIsTTY || format == nil || output == nil || format.Value.String() != "html" || output.Value.String() != "" {
		return nil
	}
	return usageError{fmt.Errorf("--format html writes a page for a browser: name its file with -o (orchstat %s --format html -o %s.html), or redirect standard output", cmd.Name(), cmd.Name())}
}

// warnAll tells the user what a library did other than asked, a warning
// a line.
func warnAll(w io.Writer, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintf(w, "orchstat: warning: %s\n", render.EscapeControls(m))
	}
}
