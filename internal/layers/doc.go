// Package layers holds no code: its test checks that the packages of Skiff import
// only downward, in the order of the package list of docs/ARCHITECTURE.md (each
// line imports only lines below it; the internal/ helpers are leaves that import
// none of the listed packages), and the import rules that page states one by one.
package layers
