package check

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
)

// journalStore is a made-up Store that keeps the deliveries recorded.
type journalStore struct {
	Store // the rest is not called
	path  string
	got   [][]alerts.Delivery
	err   error
}

func (s *journalStore) Path() string { return s.path }

func (s *journalStore) RecordDeliveries(_ context.Context, ds []alerts.Delivery, _ time.Time) error {
	s.got = append(s.got, ds)
	return s.err
}

// The journal folds into the store what a check journaled before it was
// killed: a line cut short by the kill is ignored (that delivery is tried
// again), and the journal is emptied once recorded, but kept when the
// store could not record it.
func TestFoldDeliveries(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		journal  *string // nil: no journal file
		storeErr error
		want     [][]alerts.Delivery
		kept     bool // the journal is still there
	}{
		{name: "no journal"},
		{name: "empty journal", journal: ptr("")},
		{name: "two outcomes and a torn line",
			journal: ptr(`{"id":1,"attempts":2,"at":"2026-11-21T12:00:00Z"}` + "\n" +
				`{"id":0,"attempts":1,"at":"2026-11-21T12:00:00Z"}` + "\n" +
				`{"id":2,"attempts":3,"error":"HTTP 500","at":"2026-11-21T12:00:00Z"}` + "\n" + `{"id":3,"att`),
			want: [][]alerts.Delivery{{{ID: 1, Attempts: 2, At: at}, {ID: 2, Attempts: 3, Err: "HTTP 500", At: at}}}},
		{name: "store fails", journal: ptr(`{"id":1,"attempts":1,"at":"2026-11-21T12:00:00Z"}` + "\n"),
			storeErr: errors.New("disk full"), want: [][]alerts.Delivery{{{ID: 1, Attempts: 1, At: at}}}, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := &journalStore{path: filepath.Join(t.TempDir(), "orchstat.duckdb"), err: tc.storeErr}
			if tc.journal != nil {
				if err := os.WriteFile(st.path+".deliveries", []byte(*tc.journal), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := foldDeliveries(context.Background(), st, at)
			if !errors.Is(err, tc.storeErr) {
				t.Errorf("error %v, want %v", err, tc.storeErr)
			}
			if !reflect.DeepEqual(st.got, tc.want) {
				t.Errorf("recorded %+v, want %+v", st.got, tc.want)
			}
			_, statErr := os.Stat(st.path + ".deliveries")
			if kept := statErr == nil; kept != (tc.kept || (tc.journal != nil && *tc.journal == "")) {
				t.Errorf("journal kept: %v", kept)
			}
		})
	}
}

// What the journal records, a fold reads back as it was.
func TestJournalRoundTrip(t *testing.T) {
	t.Parallel()
	st := &journalStore{path: filepath.Join(t.TempDir(), "orchstat.duckdb")}
	j, err := openJournal(st.path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 21, 12, 0, 0, 123_000_000, time.UTC)
	want := []alerts.Delivery{{ID: 4, Attempts: 1, At: at}, {ID: 5, Attempts: 3, Err: "timeout", At: at}}
	for _, d := range want {
		if err := j.record(d); err != nil {
			t.Fatal(err)
		}
	}
	j.close()
	if err := foldDeliveries(context.Background(), st, at); err != nil {
		t.Fatal(err)
	}
	if len(st.got) != 1 || !reflect.DeepEqual(st.got[0], want) {
		t.Errorf("recorded %+v, want %+v", st.got, want)
	}
}

func ptr[T any](v T) *T { return &v }
