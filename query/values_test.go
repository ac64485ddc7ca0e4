package query

import (
	"context"
	"encoding/json"
	"math"
	"math/big"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

func bigInt(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

// TestPlainValue converts duckdb-go's own types, as the driver scans them
// into an any, into the plain values reports.Table holds.
func TestPlainValue(t *testing.T) {
	uuid := duckdb.UUID{0x28, 0x63, 0x32, 0xba, 0xd9, 0x12, 0x40, 0x78, 0xa4, 0x5a, 0xc1, 0x3b, 0x2c, 0xca, 0xfb, 0xcd}
	when := time.Date(2026, 1, 29, 18, 48, 11, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name   string
		in     any
		dbType string
		want   any
	}{
		{"interval", duckdb.Interval{Days: 2, Months: 1, Micros: 3_000_000}, "INTERVAL", "1 month 2 days 00:00:03"},
		{"interval pointer", &duckdb.Interval{Days: 1}, "INTERVAL", "1 day"},
		{"decimal is exact", duckdb.Decimal{Width: 38, Scale: 10, Value: big.NewInt(123450000000)}, "DECIMAL", json.Number("12.3450000000")},
		{"decimal pointer", &duckdb.Decimal{Width: 4, Scale: 2, Value: big.NewInt(-5)}, "DECIMAL", json.Number("-0.05")},
		{"uuid", uuid, "UUID", "286332ba-d912-4078-a45a-c13b2ccafbcd"},
		{"uuid as bytes", uuid[:], "UUID", "286332ba-d912-4078-a45a-c13b2ccafbcd"},
		{"blob of 16 bytes stays bytes", uuid[:], "BLOB", uuid[:]},
		{"hugeint", bigInt("-170141183460469231731687303715884105728"), "HUGEINT", json.Number("-170141183460469231731687303715884105728")},
		{"nil hugeint", (*big.Int)(nil), "HUGEINT", nil},
		{"list of interval", []any{duckdb.Interval{Days: 1}}, "INTERVAL[]", []any{"1 day"}},
		{"struct of decimal", map[string]any{"d": duckdb.Decimal{Width: 3, Scale: 1, Value: big.NewInt(3)}}, "STRUCT(d DECIMAL(3,1))", map[string]any{"d": json.Number("0.3")}},
		{"map", duckdb.Map{int32(1): duckdb.Interval{}}, "MAP(INTEGER, INTERVAL)", map[any]any{int32(1): "00:00:00"}},
		{"time to UTC", when, "TIMESTAMPTZ", when.UTC()},
		{"plain values pass", int32(3), "INTEGER", int32(3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plainValue(tt.in, tt.dbType); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plainValue(%#v) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

// TestPlainValueFromDuckDB runs the types through the real driver: what
// `orchstat sql` hands the renderers.
func TestPlainValueFromDuckDB(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "orchstat.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl, err := queryTable(ctx, st.conn, "", `SELECT
		'286332ba-d912-4078-a45a-c13b2ccafbcd'::UUID,
		INTERVAL '1 month 2 days 3 seconds',
		0.3::DECIMAL(3,1),
		(-0.05)::DECIMAL(4,2),
		'1234567890123456789012345678.0000000000'::DECIMAL(38,10),
		123456789012345678901234567890::HUGEINT,
		[INTERVAL 1 DAY],
		MAP {1: 'x', 2: 'y'},
		{'a': 1.5::DECIMAL(2,1)}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		"286332ba-d912-4078-a45a-c13b2ccafbcd",
		"1 month 2 days 00:00:03",
		json.Number("0.3"),
		json.Number("-0.05"),
		json.Number("1234567890123456789012345678.0000000000"),
		json.Number("123456789012345678901234567890"),
		[]any{"1 day"},
		map[any]any{int32(1): "x", int32(2): "y"},
		map[string]any{"a": json.Number("1.5")},
	}
	if len(tbl.Rows) != 1 {
		t.Fatalf("rows = %v", tbl.Rows)
	}
	for i, w := range want {
		if got := tbl.Rows[0][i]; !reflect.DeepEqual(got, w) {
			t.Errorf("column %d (%s) = %#v, want %#v", i, tbl.Columns[i], got, w)
		}
	}
}

// TestIntervalText checks intervalText against what DuckDB itself
// prints (CAST(i AS VARCHAR)) for the same intervals.
func TestIntervalText(t *testing.T) {
	tests := []struct {
		months, days, micros int64
		want                 string
	}{
		{1, 2, 3_000_000, "1 month 2 days 00:00:03"},
		{14, 1, 1_500_000, "1 year 2 months 1 day 00:00:01.5"},
		{-1, -2, -3_000_000, "-1 month -2 days -00:00:03"},
		{0, 0, 0, "00:00:00"},
		{1, -3, 360_000_000_007, "1 month -3 days 100:00:00.000007"},
		{11, 0, 0, "11 months"},
		{0, 1, -1_250_000, "1 day -00:00:01.25"},
		{24, 0, 0, "2 years"},
		{-13, 0, 0, "-1 year -1 month"},
		{0, 0, 61_000_001, "00:01:01.000001"},
		{0, 0, math.MinInt64, "-2562047788:00:54.775808"},
	}
	for _, tt := range tests {
		if got := intervalText(tt.months, tt.days, tt.micros); got != tt.want {
			t.Errorf("intervalText(%d, %d, %d) = %q, want %q", tt.months, tt.days, tt.micros, got, tt.want)
		}
	}
}

func TestDecimalText(t *testing.T) {
	tests := []struct {
		unscaled *big.Int
		scale    int64
		want     json.Number
	}{
		{big.NewInt(3), 1, "0.3"},
		{big.NewInt(30), 2, "0.30"},
		{big.NewInt(-5), 2, "-0.05"},
		{big.NewInt(0), 3, "0.000"},
		{big.NewInt(12345), 0, "12345"},
		{big.NewInt(-12345), 2, "-123.45"},
		{nil, 2, "0.00"},
		{bigInt("99999999999999999999999999999999999999"), 38, "0.99999999999999999999999999999999999999"},
	}
	for _, tt := range tests {
		if got := decimalText(tt.unscaled, tt.scale); got != tt.want {
			t.Errorf("decimalText(%v, %d) = %q, want %q", tt.unscaled, tt.scale, got, tt.want)
		}
	}
}
