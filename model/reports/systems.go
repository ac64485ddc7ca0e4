package reports

import "github.com/orchstat/orchstat/model/systems"

// SystemOrder is the order systems are listed in (model/systems' Rank).
// A system not listed comes after these, by name.
var SystemOrder = systems.Ranked()
