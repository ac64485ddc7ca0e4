package yamlast

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
)

// The bounds of every YAML file orchstat reads (rule files, policy files,
// rule test files). The YAML parser's time and memory grow faster than the
// file with nesting (200 KB of [[[...]]] took 15 GB and 152 s), so a file
// is refused before it is parsed when it is larger than MaxFileSize or
// nests deeper than MaxDepth. A real rule file nests 5 deep and is a few
// KB; a file at both limits parses in well under a second.
const (
	MaxFileSize = 1 << 20
	MaxDepth    = 64
)

// SizeError is a file larger than MaxFileSize.
type SizeError struct {
	Path string
	Size int64 // -1 when not known (a pipe or device that went on)
}

func (e *SizeError) Error() string {
	if e.Path == "" {
		return e.Message()
	}
	return e.Path + ": " + e.Message()
}

// Message is the error without the file's name.
func (e *SizeError) Message() string {
	if e.Size < 0 {
		return fmt.Sprintf("more than %d bytes (1 MiB), the most orchstat reads of a YAML file", MaxFileSize)
	}
	return fmt.Sprintf("%d bytes, more than the %d (1 MiB) orchstat reads of a YAML file", e.Size, MaxFileSize)
}

// ReadFile reads a YAML file of at most MaxFileSize bytes. It reads at
// most one byte more whatever the file is, so /dev/zero or a pipe that
// never ends cannot exhaust memory, and it opens without blocking, so a
// named pipe nobody writes to is an error rather than a hang. A directory
// is an error that says so. Errors keep fs.ErrNotExist for a missing file.
func ReadFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a file", path)
	}
	if st.Mode().IsRegular() && st.Size() > MaxFileSize {
		return nil, &SizeError{Path: path, Size: st.Size()}
	}
	// O_NONBLOCK only matters for pipes: open does not wait for a writer,
	// and reads still wait for data through the runtime's poller.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		size := int64(-1)
		if st.Mode().IsRegular() {
			size = int64(len(b)) // it grew while being read
		}
		return nil, &SizeError{Path: path, Size: size}
	}
	if len(b) == 0 && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: is a %s, not a file, and nothing could be read from it", path, kind(st.Mode()))
	}
	return b, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// DepthError is a document nested deeper than MaxDepth, at the bracket or
// line where it goes deeper.
type DepthError struct {
	Line, Column int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Message())
}

// Message is the error without its position.
func (e *DepthError) Message() string {
	return fmt.Sprintf("YAML: nested too deep: more than %d levels of lists and mappings (orchstat reads at most %d)", MaxDepth, MaxDepth)
}

// CheckSize reports data larger than MaxFileSize, for data that did not
// come through ReadFile (built in, standard input).
func CheckSize(path string, data []byte) error {
	if len(data) > MaxFileSize {
		return &SizeError{Path: path, Size: int64(len(data))}
	}
	return nil
}

// CheckDepth scans data as the YAML lexer would, without building
// anything, and reports the first place it nests deeper than MaxDepth:
// block collections by indentation (and "- " entries nested on one line),
// plus open [ and { of flow collections. Comments, quoted scalars and
// block scalars (| and >) are skipped, so brackets in text do not count.
// It errs on the side of counting: a "- " entry of a scalar counts as a
// level. Memory is O(MaxDepth) and time O(len(data)).
func CheckDepth(data []byte) error {
	s := depthScanner{block: -1}
	line := 0
	for start := 0; start <= len(data); {
		end := start
		for end < len(data) && data[end] != '\n' {
			end++
		}
		line++
		if err := s.line(data[start:end], line); err != nil {
			return err
		}
		start = end + 1
	}
	return nil
}

type depthScanner struct {
	indents []int // open block collections, by column
	flow    int   // open [ and {
	quote   byte  // a quoted scalar that goes on past its line: ' or "
	// block is the column a block scalar's lines must be indented past,
	// -1 outside one; blockText is the indentation of its first line.
	block, blockText int
}

type scanMode int

const (
	nodeStart scanMode = iota // where a node may begin (block context)
	plainText                 // in a key or plain scalar (block context)
	inFlow                    // inside [ ] or { }
	flowNode                  // inside [ ] or { }, where a node may begin
)

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func indentOf(l []byte) int {
	i := 0
	for i < len(l) && l[i] == ' ' {
		i++
	}
	return i
}

func blankLine(l []byte) bool {
	for _, c := range l {
		if !isBlank(c) {
			return false
		}
	}
	return true
}

func (s *depthScanner) deeper(l []byte, at, line int) error {
	if len(s.indents)+s.flow > MaxDepth {
		return &DepthError{Line: line, Column: utf8.RuneCount(l[:at]) + 1}
	}
	return nil
}

func (s *depthScanner) line(l []byte, line int) error {
	if s.block >= 0 {
		if blankLine(l) {
			return nil
		}
		ind := indentOf(l)
		if s.blockText < 0 && ind > s.block {
			s.blockText = ind
		}
		if s.blockText >= 0 && ind >= s.blockText {
			return nil // the block scalar's text
		}
		s.block = -1
	}
	i, mode := 0, nodeStart
	switch {
	case s.quote != 0:
		i = s.skipQuote(l, 0)
		if i < 0 {
			return nil
		}
		mode = plainText
		if s.flow > 0 {
			mode = inFlow
		}
	case s.flow > 0:
		mode = flowNode
	default:
		ind := indentOf(l)
		if ind == len(l) || blankLine(l) || l[ind] == '#' {
			return nil
		}
		if ind == 0 && (marker(l, "---") || marker(l, "...")) {
			s.indents = s.indents[:0] // a new document
			i = 3
			break
		}
		if ind == 0 && l[0] == '%' {
			return nil // a directive
		}
		for len(s.indents) > 0 && s.indents[len(s.indents)-1] >= ind {
			s.indents = s.indents[:len(s.indents)-1]
		}
		s.indents = append(s.indents, ind)
		if err := s.deeper(l, ind, line); err != nil {
			return err
		}
		i = ind
		// "- - x" and "? x" open a collection inside this one on the
		// same line; what follows is indented to where its text starts.
		for i < len(l) && (l[i] == '-' || l[i] == '?' || l[i] == ':') && (i+1 == len(l) || isBlank(l[i+1])) {
			i++
			for i < len(l) && isBlank(l[i]) {
				i++
			}
			if i < len(l) && l[i] != '#' {
				s.indents = append(s.indents, i)
				if err := s.deeper(l, i, line); err != nil {
					return err
				}
			}
		}
	}
	return s.scan(l, i, mode, line)
}

func marker(l []byte, m string) bool {
	return len(l) >= 3 && string(l[:3]) == m && (len(l) == 3 || isBlank(l[3]))
}

// scan reads the rest of a line from i, one step of its mode at a time.
func (s *depthScanner) scan(l []byte, i int, mode scanMode, line int) error {
	var err error
	for i != lineDone && i < len(l) {
		switch mode {
		case nodeStart:
			i, mode, err = s.scanNodeStart(l, i, line)
		case plainText:
			i, mode = scanPlain(l, i)
		case inFlow, flowNode:
			i, mode, err = s.scanFlow(l, i, mode, line)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lineDone, as where a scan step goes on, says nothing more on the line
// can open a node: a comment, a block scalar, a quote going on past it.
const lineDone = -1

// scanNodeStart reads at l[i], where a node may begin, and returns where
// to go on and in what mode.
func (s *depthScanner) scanNodeStart(l []byte, i, line int) (int, scanMode, error) {
	switch c := l[i]; {
	case isBlank(c):
		return i + 1, nodeStart, nil
	case c == '#':
		return lineDone, nodeStart, nil
	case c == '&' || c == '!': // an anchor or a tag before the node
		for i < len(l) && !isBlank(l[i]) {
			i++
		}
		return i, nodeStart, nil
	case c == '[' || c == '{':
		s.flow++
		if err := s.deeper(l, i, line); err != nil {
			return i, nodeStart, err
		}
		return i + 1, flowNode, nil
	case c == '\'' || c == '"':
		s.quote = c
		return s.skipQuote(l, i+1), plainText, nil
	case c == '|' || c == '>':
		// A block scalar: its lines are indented past the innermost
		// collection's.
		s.block, s.blockText = 0, -1
		if n := len(s.indents); n > 0 {
			s.block = s.indents[n-1]
		}
		return lineDone, nodeStart, nil
	default:
		return i, plainText, nil
	}
}

// scanPlain reads at l[i], in a key or plain scalar.
func scanPlain(l []byte, i int) (int, scanMode) {
	switch c := l[i]; {
	case c == ':' && (i+1 == len(l) || isBlank(l[i+1])):
		return i + 1, nodeStart // the value of a key
	case c == '#' && i > 0 && isBlank(l[i-1]):
		return lineDone, plainText
	}
	return i + 1, plainText
}

// scanFlow reads at l[i], inside [ ] or { } (where a node may begin when
// mode is flowNode).
func (s *depthScanner) scanFlow(l []byte, i int, mode scanMode, line int) (int, scanMode, error) {
	switch c := l[i]; {
	case c == '[' || c == '{':
		s.flow++
		if err := s.deeper(l, i, line); err != nil {
			return i, mode, err
		}
		return i + 1, flowNode, nil
	case c == ']' || c == '}':
		if s.flow > 0 {
			s.flow--
		}
		if s.flow == 0 {
			return i + 1, plainText, nil // a flow key, or what follows a flow value
		}
		return i + 1, inFlow, nil
	case c == ',':
		return i + 1, flowNode, nil
	case c == ':' && (i+1 == len(l) || isBlank(l[i+1]) || l[i+1] == ',' || l[i+1] == ']' || l[i+1] == '}'):
		return i + 1, flowNode, nil
	case c == '#' && (i == 0 || isBlank(l[i-1])):
		return lineDone, mode, nil
	case (c == '\'' || c == '"') && mode == flowNode:
		s.quote = c
		return s.skipQuote(l, i+1), inFlow, nil
	case (c == '&' || c == '!') && mode == flowNode:
		for i < len(l) && !isBlank(l[i]) && l[i] != ',' && l[i] != '[' && l[i] != '{' && l[i] != ']' && l[i] != '}' {
			i++
		}
		return i, mode, nil
	case isBlank(c):
		return i + 1, mode, nil
	default:
		return i + 1, inFlow, nil
	}
}

// skipQuote skips the rest of a scalar quoted with s.quote from i, and
// returns where it ends, or -1 (s.quote still set) when it goes on past
// the line.
func (s *depthScanner) skipQuote(l []byte, i int) int {
	for ; i < len(l); i++ {
		switch {
		case s.quote == '"' && l[i] == '\\':
			i++ // an escaped character, which may be the quote
		case l[i] == s.quote && s.quote == '\'' && i+1 < len(l) && l[i+1] == '\'':
			i++ // '' is a quote inside single quotes
		case l[i] == s.quote:
			s.quote = 0
			return i + 1
		}
	}
	return -1
}

// checkInput bounds data before the parser sees it.
func checkInput(data []byte) error {
	if err := CheckSize("", data); err != nil {
		return err
	}
	return CheckDepth(data)
}

// MaxExpanded bounds the values a document stands for once its aliases
// are expanded: ten aliases of ten aliases of ... (a "billion laughs")
// make a few hundred bytes stand for a billion values, which a decoder
// builds one by one (4 GB and minutes for a rule test file).
const MaxExpanded = 200000

// ExpansionError is a document whose aliases expand past MaxExpanded
// values, at the alias where it does.
type ExpansionError struct {
	Line, Column int
}

func (e *ExpansionError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Message())
}

// Message is the error without its position.
func (e *ExpansionError) Message() string {
	return fmt.Sprintf("YAML: the file expands (through aliases) to more than %d values", MaxExpanded)
}

// CheckExpansion counts the values of f's documents as a decoder sees
// them, aliases expanded, and reports the alias where they pass
// MaxExpanded. It stops there, so it costs at most MaxExpanded steps.
func CheckExpansion(f *ast.File) error {
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		x := expansion{anchors: Anchors(d.Body)}
		if x.visit(d.Body, nil) {
			line, col := Pos(x.at)
			return &ExpansionError{Line: line, Column: col}
		}
	}
	return nil
}

type expansion struct {
	anchors map[string]ast.Node
	n       int
	at      ast.Node // the alias being expanded when the count ran out
}

// visit counts n and what it holds; it reports true once past the bound.
// alias is the outermost alias being expanded, where the error points.
func (x *expansion) visit(n ast.Node, alias ast.Node) bool {
	if n == nil {
		return false
	}
	if x.n++; x.n > MaxExpanded {
		x.at = alias
		if x.at == nil {
			x.at = n
		}
		return true
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, mv := range v.Values {
			if x.visit(mv, alias) {
				return true
			}
		}
	case *ast.MappingValueNode:
		return x.visit(v.Key, alias) || x.visit(v.Value, alias)
	case *ast.MappingKeyNode:
		return x.visit(v.Value, alias)
	case *ast.SequenceNode:
		for _, it := range v.Values {
			if x.visit(it, alias) {
				return true
			}
		}
	case *ast.AnchorNode:
		return x.visit(v.Value, alias)
	case *ast.TagNode:
		return x.visit(v.Value, alias)
	case *ast.AliasNode:
		if v.Value == nil {
			return false
		}
		if alias == nil {
			alias = v
		}
		return x.visit(x.anchors[v.Value.String()], alias)
	}
	return false
}
