package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/query/lake"
)

// A lake's first read is answered from its files, and its replica built
// by another orchstat, started here and not waited for: `orchstat
// lake-replica --lake LAKE`, in a session of its own (so neither the
// reader's end nor a Ctrl-C at its terminal stops it), at a lower
// priority than the user's commands, its errors written to a log beside
// the replica that the next read reports (see docs/lake.md).

// replicaLog is where the build of the replica at path writes its errors.
func replicaLog(path string) string { return path + ".building.log" }

// startReplica starts the replica's build for the lake at loc, by the
// orchstat at exe, with the caller's environment (S3's credentials, the
// cache folder).
func startReplica(exe, loc, log string) error {
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	c := exec.Command(exe, "lake-replica", "--lake", loc)
	c.Stdout, c.Stderr = f, f
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return err
	}
	return c.Process.Release()
}

// buildReplicaAfter starts the replica's build once the command has
// answered, when the read found none, and reports a build that failed
// before.
func (i *ingestFirst) buildReplicaAfter(g *globals, read query.LakeRead, replica string) {
	if !read.BuildReplica || g.deps.startReplica == nil {
		return
	}
	g.after = append(g.after, func() { i.startReplica(g, replica) })
}

func (i *ingestFirst) startReplica(g *globals, replica string) {
	log := replicaLog(replica)
	if b, err := os.ReadFile(log); err == nil && len(b) > 0 {
		first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
		fmt.Fprintf(g.io.Err, "orchstat: the last build of the lake's replica failed (%s); building it again\n", first)
	}
	if err := g.deps.startReplica(i.Lake, log); err != nil {
		fmt.Fprintf(g.io.Err, "orchstat: could not start building the lake's replica (%v); the next read answers from the lake's files again\n", err)
	}
}

func newLakeReplicaCmd(g *globals) *cobra.Command {
	var loc string
	cmd := &cobra.Command{
		Use:    "lake-replica --lake LAKE",
		Short:  "Build a lake's replica in the cache (started by a lake's first read)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return buildReplica(cmd.Context(), g, loc)
		},
	}
	cmd.Flags().StringVar(&loc, "lake", "", "the lake (a directory, or s3://bucket/prefix)")
	return cmd
}

func buildReplica(ctx context.Context, g *globals, loc string) error {
	// The user's commands come first.
	syscall.Setpriority(syscall.PRIO_PROCESS, 0, 10)
	lk, err := lake.Open(ctx, loc, g.deps.lake)
	if err != nil {
		return err
	}
	path, err := lake.ReplicaPath(g.deps.lake, lk.Key())
	if err != nil {
		return err
	}
	read, err := query.BuildReplica(ctx, lk, query.LakeOptions{Replica: path})
	warnAll(g.io.Err, read.Warnings)
	if err != nil {
		return err
	}
	// No log is a build that did not fail.
	if err := os.Remove(replicaLog(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
