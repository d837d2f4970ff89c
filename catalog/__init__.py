"""The op catalog's data model: what a spec may say (signature language, families, dtypes, promotion
kinds), parsed from specs/ into frozen dataclasses. Both the generator and the gate depend on this
package; it depends on neither."""
