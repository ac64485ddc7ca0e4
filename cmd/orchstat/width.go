package main

import (
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// terminalWidth is the width of the terminal f, from the kernel, else
// $COLUMNS, else 80: a terminal is never taken to be unbounded.
func terminalWidth(f *os.File) int {
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		return int(ws.Col)
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// addWideFlag adds --wide, which prints tables in full at a terminal as
// they are printed to a pipe or a file.
func addWideFlag(cmd *cobra.Command, io *IO) {
	cmd.Flags().Var(wideFlag{io}, "wide", "print tables in full even when they are wider than the terminal")
	cmd.Flags().Lookup("wide").NoOptDefVal = "true"
}

// wideFlag is --wide: set, it forgets the terminal's width.
type wideFlag struct{ io *IO }

func (w wideFlag) String() string { return "false" }
func (w wideFlag) Type() string   { return "bool" }
func (w wideFlag) Set(s string) error {
	wide, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if wide {
		w.io.OutWidth = 0
	}
	return nil
}
