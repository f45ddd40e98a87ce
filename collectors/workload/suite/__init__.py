"""redis-benchmarks-specification test-suite files imported as stallscope cases
(`stallscope cases import`, docs/cases.md).

- `importer`  a suite file -> a case document and its notes (what was translated, what not)
- `dataset`   what a suite preloads and how it names keys
- `keys`      a command's key words in the dataset's names
- `mix`       memtier command mixes and key patterns

The importer's API is re-exported here. The modules of the package import each other by
their full names (`from collectors.workload.suite.keys import ...`), never through this
package, which imports `importer` and would close a cycle.
"""
from collectors.workload.suite.importer import SuiteError, SuiteImport, import_suite, write_case_yaml

__all__ = ["SuiteError", "SuiteImport", "import_suite", "write_case_yaml"]
