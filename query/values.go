package query

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// plainValue converts what the driver scans into an any for a DuckDB value
// into the plain Go values reports.Table promises (nil, string, bool,
// integers, floats, json.Number, time.Time, []any, map[string]any and
// map[any]any of those), so no renderer needs to know the driver's types.
// dbType is the column's DuckDB type name where known: the driver hands a
// UUID over as 16 bytes, which only the column type tells from a BLOB.
func plainValue(v any, dbType string) any {
	switch x := v.(type) {
	case []byte:
		if dbType == "UUID" && len(x) == 16 {
			return uuidText(x)
		}
	case duckdb.UUID:
		return uuidText(x[:])
	case *duckdb.UUID:
		if x == nil {
			return nil
		}
		return uuidText(x[:])
	case duckdb.Decimal:
		return decimalText(x.Value, int64(x.Scale))
	case *duckdb.Decimal:
		if x == nil {
			return nil
		}
		return decimalText(x.Value, int64(x.Scale))
	case duckdb.Interval:
		return intervalText(int64(x.Months), int64(x.Days), x.Micros)
	case *duckdb.Interval:
		if x == nil {
			return nil
		}
		return intervalText(int64(x.Months), int64(x.Days), x.Micros)
	case *big.Int: // HUGEINT, UHUGEINT
		if x == nil {
			return nil
		}
		return json.Number(x.String())
	case duckdb.OrderedMap:
		m := make(map[any]any, x.Len())
		for i, k := range x.Keys() {
			m[plainValue(k, "")] = plainValue(x.Values()[i], "")
		}
		return m
	case *duckdb.OrderedMap:
		if x == nil {
			return nil
		}
		return plainValue(*x, dbType)
	case duckdb.Map:
		if x == nil {
			return nil
		}
		m := make(map[any]any, len(x))
		for k, e := range x {
			m[plainValue(k, "")] = plainValue(e, "")
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = plainValue(e, "")
		}
	case map[string]any: // STRUCT
		for k, e := range x {
			x[k] = plainValue(e, "")
		}
	case time.Time:
		return x.UTC()
	}
	return v
}

func uuidText(b []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// decimalText is the exact decimal unscaled × 10^-scale with scale digits
// after the point, as DuckDB prints a DECIMAL: 0.30, -0.05, 12.3450000000.
// The driver's own Float64 would lose digits.
func decimalText(unscaled *big.Int, scale int64) json.Number {
	if unscaled == nil {
		unscaled = new(big.Int)
	}
	s := new(big.Int).Abs(unscaled).String()
	if scale > 0 {
		n := int(scale)
		if len(s) <= n {
			s = strings.Repeat("0", n-len(s)+1) + s
		}
		s = s[:len(s)-n] + "." + s[len(s)-n:]
	}
	if unscaled.Sign() < 0 {
		s = "-" + s
	}
	return json.Number(s)
}

// intervalText prints an interval as DuckDB does (CAST(i AS VARCHAR), which
// the duckdb CLI shows): years and months split from the months, then days,
// then the microseconds as [-]HH:MM:SS[.ffffff] with trailing zeros of the
// fraction dropped and hours unbounded; each part keeps its own sign and
// zero parts are left out, "00:00:00" when all are zero. For example
// "1 year 2 months 1 day 00:00:01.5", "-1 month -2 days -00:00:03",
// "1 month -3 days 100:00:00.000007".
func intervalText(months, days, micros int64) string {
	var parts []string
	unit := func(n int64, name string) {
		if n == 0 {
			return
		}
		s := strconv.FormatInt(n, 10) + " " + name
		if n != 1 && n != -1 {
			s += "s"
		}
		parts = append(parts, s)
	}
	unit(months/12, "year")
	unit(months%12, "month")
	unit(days, "day")
	if micros != 0 {
		sign := ""
		u := uint64(micros)
		if micros < 0 {
			sign = "-"
			u = -u
		}
		const second, minute, hour = 1_000_000, 60_000_000, 3_600_000_000
		s := fmt.Sprintf("%s%02d:%02d:%02d", sign, u/hour, u%hour/minute, u%minute/second)
		if frac := u % second; frac != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%06d", frac), "0")
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "00:00:00"
	}
	return strings.Join(parts, " ")
}
