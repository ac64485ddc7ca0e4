package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/orchstat/orchstat/model/rows"
)

// feedFunc is the table function a declared table's rows reach DuckDB
// through: `INSERT INTO <table> SELECT * FROM orchstat_feed()`, with the
// rows in the statement's context (feedKey). DuckDB asks it for a chunk of
// rows at a time and it fills each column's vector with typed setters, so
// no value is boxed into a driver.Value and no row crosses into DuckDB on
// its own (duckdb-go's row Appender, used before, did both).
//
// A table function is registered in the database, not the connection, and
// registering a name again silently keeps the first definition; so there
// is one function for every table, it holds no rows of its own, and each
// statement's bind takes its rows, and with them its columns, from the
// context.
const feedFunc = "orchstat_feed"

type feedKey struct{}

// feed is one INSERT's rows: a declared table's rows, from one or more
// sets.
type feed struct {
	table string
	conv  *rowConv
	segs  []feedSeg
	n     int
}

// feedSeg is one set's rows of the table: n rows from base, conv.size
// apart.
type feedSeg struct {
	base unsafe.Pointer
	n    int
}

// registerFeed makes feedFunc known to the store's database.
func (s *Store) registerFeed() error {
	return duckdb.RegisterTableUDF(s.conn, feedFunc, duckdb.ChunkTableFunction{
		BindArgumentsContext: func(ctx context.Context, _ map[string]any, _ ...any) (duckdb.ChunkTableSource, error) {
			f, ok := ctx.Value(feedKey{}).(*feed)
			if !ok {
				return nil, errors.New(feedFunc + ": no rows to feed")
			}
			return &feedSource{f: f}, nil
		},
	})
}

// feedSource is feedFunc's scan of one feed.
type feedSource struct {
	f        *feed
	seg, row int // the next row: f.segs[seg]'s row-th
	ptrs     []unsafe.Pointer
}

func (s *feedSource) ColumnInfos() []duckdb.ColumnInfo { return s.f.conv.infos }

func (s *feedSource) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: uint(s.f.n), Exact: true}
}

func (s *feedSource) Init() {}

// FillChunk fills the chunk with the next rows, a column at a time. The
// size is set before any vector is written: a vector takes the chunk's
// size as its length.
func (s *feedSource) FillChunk(c duckdb.DataChunk) error {
	capa := duckdb.GetDataChunkCapacity()
	if s.ptrs == nil {
		s.ptrs = make([]unsafe.Pointer, 0, capa)
	}
	ptrs := s.ptrs[:0]
	conv := s.f.conv
	for len(ptrs) < capa && s.seg < len(s.f.segs) {
		sg := s.f.segs[s.seg]
		for ; s.row < sg.n && len(ptrs) < capa; s.row++ {
			ptrs = append(ptrs, unsafe.Add(sg.base, uintptr(s.row)*conv.size))
		}
		if s.row == sg.n {
			s.seg, s.row = s.seg+1, 0
		}
	}
	if err := c.SetSize(len(ptrs)); err != nil {
		return err
	}
	for j, col := range conv.cols {
		var err error
		switch col.kind {
		case colString:
			err = fillStrings(c, j, ptrs, col)
		case colVerbatim:
			err = fillCol[string](c, j, ptrs, col)
		case colInt32:
			err = fillCol[int32](c, j, ptrs, col)
		case colInt64:
			err = fillCol[int64](c, j, ptrs, col)
		case colUint64:
			err = fillCol[uint64](c, j, ptrs, col)
		case colFloat64:
			err = fillCol[float64](c, j, ptrs, col)
		case colBool:
			err = fillCol[bool](c, j, ptrs, col)
		case colTime:
			err = fillCol[time.Time](c, j, ptrs, col)
		}
		if err != nil {
			return fmt.Errorf("%s: column %s: %w", feedFunc, conv.infos[j].Name, err)
		}
	}
	return nil
}

// field is the column's field in the row at p, or nil when it is a nil
// pointer (NULL).
func field(p unsafe.Pointer, col colConv) unsafe.Pointer {
	f := unsafe.Add(p, col.off)
	if col.nullable {
		return *(*unsafe.Pointer)(f)
	}
	return f
}

// fillCol sets column j of the rows at ptrs, each a field of Go type T.
func fillCol[T any](c duckdb.DataChunk, j int, ptrs []unsafe.Pointer, col colConv) error {
	for i, p := range ptrs {
		var err error
		if f := field(p, col); f == nil {
			err = duckdb.SetChunkValue[any](c, j, i, nil)
		} else {
			err = duckdb.SetChunkValue(c, j, i, *(*T)(f))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fillStrings is fillCol for strings stored as rows.StoreString says.
func fillStrings(c duckdb.DataChunk, j int, ptrs []unsafe.Pointer, col colConv) error {
	for i, p := range ptrs {
		var err error
		if f := field(p, col); f == nil {
			err = duckdb.SetChunkValue[any](c, j, i, nil)
		} else {
			err = duckdb.SetChunkValue(c, j, i, rows.StoreString(*(*string)(f)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sqlTypes are the DuckDB types of the declared columns' SQL types.
var sqlTypes = map[string]duckdb.Type{
	"BOOLEAN":   duckdb.TYPE_BOOLEAN,
	"INTEGER":   duckdb.TYPE_INTEGER,
	"BIGINT":    duckdb.TYPE_BIGINT,
	"UBIGINT":   duckdb.TYPE_UBIGINT,
	"DOUBLE":    duckdb.TYPE_DOUBLE,
	"TIMESTAMP": duckdb.TYPE_TIMESTAMP,
	"VARCHAR":   duckdb.TYPE_VARCHAR,
}

// columnInfo is feedFunc's column for a declared `col:"name TYPE"` tag:
// the table's own type, so that INSERT … SELECT * casts nothing and a
// value is converted to the column's type by the setter.
func columnInfo(tag string) duckdb.ColumnInfo {
	name, typ, _ := strings.Cut(tag, " ")
	t, ok := sqlTypes[typ]
	if !ok {
		panic("query: no feed type for the declared column " + tag)
	}
	ti, err := duckdb.NewTypeInfo(t)
	if err != nil {
		panic("query: " + err.Error())
	}
	return duckdb.ColumnInfo{Name: name, T: ti}
}
