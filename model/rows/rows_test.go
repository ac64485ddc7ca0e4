package rows

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// sqlTypes are the Go types a column of each SQL type is declared with;
// a pointer to one is the nullable column.
var sqlTypes = map[string]reflect.Type{
	"INTEGER":   reflect.TypeFor[int32](),
	"BIGINT":    reflect.TypeFor[int64](),
	"UBIGINT":   reflect.TypeFor[uint64](),
	"DOUBLE":    reflect.TypeFor[float64](),
	"BOOLEAN":   reflect.TypeFor[bool](),
	"VARCHAR":   reflect.TypeFor[string](),
	"TIMESTAMP": reflect.TypeFor[time.Time](),
}

// TestDeclarations holds every table declaration to what the store reads
// from it: a table and what it holds named, each field a column whose Go
// type is the one its SQL type takes, no column twice, and a file table
// that starts with file_id.
func TestDeclarations(t *testing.T) {
	for _, set := range []reflect.Type{reflect.TypeFor[Set](), reflect.TypeFor[States]()} {
		for i := range set.NumField() {
			f := set.Field(i)
			t.Run(f.Name, func(t *testing.T) {
				name := f.Tag.Get("table")
				if name == "" || f.Tag.Get("holds") == "" || f.Type.Kind() != reflect.Slice {
					t.Fatalf("%s.%s: want a slice of rows tagged with its table and what it holds", set.Name(), f.Name)
				}
				seen := map[string]bool{}
				var first string
				for _, c := range reflect.VisibleFields(f.Type.Elem()) {
					if c.Anonymous || c.Tag.Get("col") == "-" { // not a column
						continue
					}
					col, typ, ok := strings.Cut(c.Tag.Get("col"), " ")
					if !ok {
						t.Errorf("%s.%s has no col tag of its column and SQL type", name, c.Name)
						continue
					}
					if first == "" {
						first = col
					}
					if seen[col] {
						t.Errorf("%s.%s: two fields declare it", name, col)
					}
					seen[col] = true
					goType := c.Type
					if goType.Kind() == reflect.Pointer {
						goType = goType.Elem()
					}
					if want, ok := sqlTypes[typ]; !ok || goType != want {
						t.Errorf("%s.%s is %s in Go, which a %s column does not take", name, col, c.Type, typ)
					}
				}
				if set == reflect.TypeFor[Set]() && first != "file_id" {
					t.Errorf("%s starts with %s, not file_id: a file's rows could not be replaced", name, first)
				}
			})
		}
	}
}
