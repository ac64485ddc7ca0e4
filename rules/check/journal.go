package check

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
)

// Delivering notifications can take as long as a receiver's timeouts, so
// a check does it holding no lock on the store: it writes each outcome,
// as the receiver answers, to a journal beside the store (<db>.deliveries,
// a JSON line each, synced), and folds the journal into the store
// afterwards, or at the next delivery should it be killed first. So an
// acknowledged notification is never sent twice. One check delivers at a
// time (Options.Lock), and only the holder of that lock appends to the
// journal or folds it.

// journal appends delivery outcomes to the journal.
type journal struct{ f *os.File }

// openJournal opens the journal of the store at db for appending.
func openJournal(db string) (*journal, error) {
	f, err := os.OpenFile(db+".deliveries", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the delivery journal: %w", err)
	}
	return &journal{f: f}, nil
}

// record writes d and syncs it: once record returns, a later check knows.
func (j *journal) record(d alerts.Delivery) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the delivery journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("writing the delivery journal: %w", err)
	}
	return nil
}

func (j *journal) close() error { return j.f.Close() }

// foldDeliveries records the journal's outcomes in the store, then
// empties the journal. A line cut short by a crash is ignored: its
// delivery is tried again. The caller holds the delivery lock.
func foldDeliveries(ctx context.Context, st Store, now time.Time) error {
	path := st.Path() + ".deliveries"
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) || (err == nil && len(b) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the delivery journal: %w", err)
	}
	var ds []alerts.Delivery
	for _, line := range strings.Split(string(b), "\n") {
		var d alerts.Delivery
		if line != "" && json.Unmarshal([]byte(line), &d) == nil && d.ID > 0 {
			ds = append(ds, d)
		}
	}
	if err := st.RecordDeliveries(ctx, ds, now); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("emptying the delivery journal: %w", err)
	}
	return nil
}
