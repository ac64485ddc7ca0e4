package records

// Format is how one system's record files are found and read. Each
// format package (ingest/factory, ingest/codex, …) declares its own, and
// ingest asks each in turn: adding a format is its package and one line
// of registration, not a branch in every walk.
type Format struct {
	// System is the system whose records these are (model/systems).
	System string
	// Kinds are its kinds of file.
	Kinds []Kind
	// Home is the folder below a project where the system keeps its
	// files (claudestrator's .orchestrator, orchestr8's .claude): its
	// kinds' files are looked for there, and in the folder named, on
	// every ingest, without a walk.
	Home string
	// Guess names the kind of a file given with --input-format whose
	// name says nothing, from its extension (lower case, with its dot)
	// and first bytes; false when they are not this format's.
	Guess func(ext string, head []byte) (kind string, ok bool)
}

// Kind is one kind of a system's record files.
type Kind struct {
	// Name is the kind as stored in files.kind (model/systems).
	Name string
	// File is the name its files are kept under. Beside, when set, is a
	// file that must lie next to it for it to count: the web pipeline's
	// generic names count only as a pair. A file of that name without it
	// is no kind's.
	File, Beside string
	// Path, for a kind with no fixed name, recognises its files by name
	// and place. Formats are asked in their registration's order, so a
	// stricter rule registered first wins.
	Path func(path string) bool
	// Head, for a kind told by content alone, recognises a file's first
	// bytes.
	Head func(head []byte) bool
	// Parse reads a file whole.
	Parse Parser
	// Stream, for a format of lines that grow, reads a file on from
	// where the last ingest stopped.
	Stream *StreamFormat
}
