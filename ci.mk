# The test suites' JVM and Spark settings, included by the Makefile. Each pays a tenth or more of a suite's
# CPU (docs/decisions.md, "CI: the data path's suites in two lanes"); none changes what a query
# returns. The profile passes CDC_JAVA_OPTIONS to the driver's and the executors' JVMs.
#
# - C1 alone: the dbt and cdc-* JVMs a suite starts live minutes at most; C2's compiler threads took 73 s
#   of one slow module's 173 s of JVM CPU. A suite's own session keeps C2 (tests/python/conftest.py).
# - Interpreted queries: on a few rows, compiling each query's generated Java costs more than it saves
#   (test_batches alone: 444 s of CPU with code generation, 304 s without). The cluster suite (make
#   test-deploy) and make run keep Spark's code generation, as deployed.
# - One task per stage (one shuffle partition, no adaptive execution) for the suites of many small dbt runs:
#   test_batches 380-394 s in place of 423-440. make test and the history property test keep the profile's
#   partitions: a history's order must not depend on how rows are spread.
TEST_JAVA_OPTIONS := -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m \
	-Dspark.sql.codegen.wholeStage=false -Dspark.sql.codegen.factoryMode=NO_CODEGEN
ONE_TASK_STAGES := -Dspark.sql.adaptive.enabled=false

lint test-python test-unit test-cluster: export CDC_JAVA_OPTIONS ?= $(TEST_JAVA_OPTIONS)
test-slow test-kafka test-orchestration test-monitoring test-history-property: export CDC_JAVA_OPTIONS ?= $(TEST_JAVA_OPTIONS) $(ONE_TASK_STAGES)
test-slow test-kafka test-orchestration test-monitoring test-history-property: export CDC_SHUFFLE_PARTITIONS ?= 1
