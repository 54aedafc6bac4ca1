// kstate: Scala (JVM) side. Run through bin/sbt (bootstraps the launcher; no sbt install needed).

// kstate is cross-built for two Spark minors from one source tree, a jar per minor
// (`kstate-spark<minor>_2.13-<version>.jar`; README, "Which jar for which Spark"):
// - Spark 4.3, the pinned one (project `root`: `bin/sbt package`, `bin/sbt test`). Spark 4.3 is
//   published on PyPI (pyspark) but not on Maven Central, so it compiles and tests against the
//   jars of the pinned pyspark in the project venv (`make venv`; pin in
//   python/requirements-dev.txt). Those jars are what users run on.
// - Spark 4.2 (project `spark42`: `bin/sbt spark42/package`, `bin/sbt spark42/test`), from Maven
//   Central (Provided), its latest 4.2 patch there (4.2.1 is on PyPI but not on Maven Central);
//   pyspark of the same version in python/requirements-spark42.txt.
// Sources common to both are under jvm/src/{main,test}/scala; what differs between the minors is
// in the shim layer's per-minor directories jvm/src/main/spark-<minor>/scala
// (docs/contributing.md, "Spark minors and the shim rule"), and Spark 4.2-only tests (Spark's own
// StateStoreSuiteBase) under jvm/src/test/spark-4.2/scala.
val sparkMinor = "4.3"
val spark42Version = "4.2.0"
val sparkJarsDir: File = {
  val env = sys.env.get("KSTATE_SPARK_JARS").map(file)
  lazy val venv = (file(".venv") / "lib").listFiles().toSeq.flatMap(p => Option(p))
    .map(_ / "site-packages" / "pyspark" / "jars").find(_.isDirectory)
  env.orElse(if ((file(".venv") / "lib").isDirectory) venv else None).getOrElse(
    sys.error("pyspark's jars not found: run `make venv` first or set KSTATE_SPARK_JARS"))
}
// The Scala toolchain comes from sbt; pyspark's copies of these would clash with it.
val scalaToolchainJars = Set("scala-library", "scala-reflect", "scala-compiler", "scala-xml")
def isToolchainJar(f: File): Boolean =
  scalaToolchainJars.exists(n => f.getName.startsWith(n + "_2.13-") || f.getName.startsWith(n + "-2.13."))

// JVM flags Spark needs on Java 17 (mirrors Spark's JavaModuleOptions) plus test settings
// Spark's own build uses.
val sparkJavaModuleOptions = Seq(
  "-XX:+IgnoreUnrecognizedVMOptions",
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.io=ALL-UNNAMED",
  "--add-opens=java.base/java.net=ALL-UNNAMED",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
  "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
  "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
  "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
  "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true"
)

// Kafka Streams itself as the test oracle (KafkaStreamsDifferentialSuite runs its
// TopologyTestDriver on the same input as kstate). What pyspark's jars already provide is
// excluded, so the test classpath holds one copy of each (pyspark's).
val kafkaStreamsVersion = "4.3.1"
val kafkaStreamsOracle: Seq[ModuleID] = Seq("kafka-streams", "kafka-streams-test-utils").map { a =>
  ("org.apache.kafka" % a % kafkaStreamsVersion % Test).excludeAll(
    ExclusionRule("org.slf4j"), ExclusionRule("com.fasterxml.jackson.core"),
    ExclusionRule("com.fasterxml.jackson.datatype"), ExclusionRule("org.lz4"),
    ExclusionRule("at.yawk.lz4"), ExclusionRule("com.github.luben"), ExclusionRule("org.xerial.snappy"),
    ExclusionRule("org.rocksdb"))
}

// A real Kafka broker and Spark's Kafka connector for the Python end-to-end tests
// (python/tests/kafka_broker.py, test_kafka_end_to_end.py; docs/kafka.md). Each set lives in a
// configuration of its own, resolved on its own: neither is on the compile or test classpath (so
// nothing leaks into the kstate jar, and the broker's kafka-clients 4.1.0 never meets the Kafka
// Streams oracle's 4.3.1 above). `kafkaTestClasspath` writes both classpaths to a file the Python
// tests read.
val KafkaBroker = config("kafka-broker").hide
val KafkaConnector = config("kafka-connector").hide
val kafkaBrokerVersion = "4.1.0"
// Spark's Kafka connector: 4.3.0 is not on Maven Central, 4.2.0 is and works with Spark 4.3
// (docs/kafka.md). Only the connector's own jars: Spark and what it brings come from pyspark.
val sparkKafkaConnectorVersion = "4.2.0"
val kafkaBrokerDeps: Seq[ModuleID] = Seq(
  "org.apache.kafka" %% "kafka" % kafkaBrokerVersion % KafkaBroker,
  "org.apache.kafka" % "kafka-tools" % kafkaBrokerVersion % KafkaBroker,
  "org.slf4j" % "slf4j-reload4j" % "1.7.36" % KafkaBroker)
val kafkaConnectorDeps: Seq[ModuleID] = Seq(
  "org.apache.spark" %% "spark-sql-kafka-0-10" % sparkKafkaConnectorVersion,
  "org.apache.spark" %% "spark-token-provider-kafka-0-10" % sparkKafkaConnectorVersion,
  "org.apache.commons" % "commons-pool2" % "2.12.0",
  "org.apache.kafka" % "kafka-clients" % kafkaBrokerVersion).map(m => (m % KafkaConnector).intransitive())
// Real checkpoint stores for the tests (python/tests/hdfs_cluster.py, s3_server.py; docs/state-store.md,
// "Checkpoints on HDFS and S3"), fetched from Maven Central, each in a hidden configuration of its
// own like the Kafka broker above: Hadoop's in-process HDFS cluster (hadoop-client-minicluster,
// run with pyspark's hadoop-client-api/runtime 3.5.0), an S3 server (s3proxy, filesystem backend)
// and Hadoop's S3A connector for Spark (hadoop-aws and the AWS SDK modules it uses, not the SDK's
// bundle of every service). `checkpointStoresClasspath` writes their classpaths for the tests.
val HdfsCluster = config("hdfs-cluster").hide
val S3Server = config("s3-server").hide
val S3AConnector = config("s3a-connector").hide
val hadoopVersion = "3.5.0" // pyspark 4.3's Hadoop client
val awsSdkVersion = "2.35.4" // what hadoop-aws 3.5.0 is built with (hadoop-project's aws-java-sdk-v2.version)
val checkpointStoreDeps: Seq[ModuleID] = Seq(
  ("org.apache.hadoop" % "hadoop-client-minicluster" % hadoopVersion % HdfsCluster).intransitive(),
  "org.gaul" % "s3proxy" % "2.6.0" % S3Server,
  "org.apache.hadoop" % "hadoop-aws" % hadoopVersion % S3AConnector) ++
  Seq("s3", "s3-transfer-manager", "sts", "apache-client").map("software.amazon.awssdk" % _ % awsSdkVersion % S3AConnector)
// Of the S3A connector's dependencies: not the SDK's bundle (the modules above instead), and not
// what Spark's own jars already hold (Netty, Apache HttpClient, commons-codec/logging, SLF4J).
val s3aExclusions: Seq[ExclusionRule] = Seq(ExclusionRule("software.amazon.awssdk", "bundle"),
  ExclusionRule("io.netty"), ExclusionRule("org.apache.httpcomponents"), ExclusionRule("commons-codec"),
  ExclusionRule("commons-logging"), ExclusionRule("org.slf4j"), ExclusionRule("org.apache.hadoop", "hadoop-common"),
  ExclusionRule("com.amazonaws"))
val checkpointStoresClasspath = taskKey[File](
  "Writes jvm/target/checkpoint-stores-classpath.json: the HDFS minicluster's, the S3 server's and the S3A connector's jars")

// protoc, for kstate's Spark Connect protocol (jvm/src/main/protobuf): 33.5, the version that
// generated Spark 4.2's and 4.3's own Connect classes (their shaded protobuf-java runtime is
// 4.33.5; pyspark's Python classes say "Protobuf Python Version: 6.33.5"). The Java classes are
// generated at compile time against that shaded runtime; the Python module is generated by
// `make proto-python` and committed (python/kstate/proto).
val Protoc = config("protoc").hide
val protocVersion = "4.33.5"
val protocDep: ModuleID = ("com.google.protobuf" % "protoc" % protocVersion % Protoc)
  .artifacts(Artifact("protoc", "exe", "exe", "linux-x86_64"))
val protocPath = taskKey[File]("Writes jvm/target/protoc-path: the protoc executable fetched from Maven Central")

def protocExe(report: UpdateReport): File = {
  val exe = report.select(configurationFilter(Protoc.name), moduleFilter(), artifactFilter(`type` = "exe")).head
  exe.setExecutable(true)
  exe
}

val kafkaTestClasspath = taskKey[File](
  "Writes jvm/target/kafka-test-classpath.json: the Kafka broker's classpath and the Spark Kafka connector's jars")

// The repository's root: both projects read their sources from it and run their tests in it.
ThisBuild / scalafmtConfig := file("project/scalafmt.conf")

val rootDir = settingKey[File]("the kstate repository root")
val testFast = taskKey[Unit]("the unit and property suites: no streaming query (make test-fast)")
ThisBuild / rootDir := (ThisBuild / baseDirectory).value

// What both minors' projects share; `minor` picks the per-minor source directories.
def kstateSettings(minor: String): Seq[Def.Setting[_]] = Seq(
    name := s"kstate-spark$minor",
    // Keeps the dot (sbt's default module name would make it kstate-spark4-3).
    moduleName := s"kstate-spark$minor",
    organization := "io.kstate",
    version := "0.1.0",
    scalaVersion := "2.13.18",

    // Sources live under jvm/ so the repo root stays shared with python/.
    Compile / scalaSource := rootDir.value / "jvm" / "src" / "main" / "scala",
    Compile / unmanagedSourceDirectories += rootDir.value / "jvm" / "src" / "main" / s"spark-$minor" / "scala",
    Compile / javaSource := rootDir.value / "jvm" / "src" / "main" / "java",
    Compile / resourceDirectory := rootDir.value / "jvm" / "src" / "main" / "resources",
    Test / scalaSource := rootDir.value / "jvm" / "src" / "test" / "scala",
    Test / unmanagedSourceDirectories += rootDir.value / "jvm" / "src" / "test" / s"spark-$minor" / "scala",
    Test / javaSource := rootDir.value / "jvm" / "src" / "test" / "java",
    Test / resourceDirectory := rootDir.value / "jvm" / "src" / "test" / "resources",

    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release:17"),
    javacOptions ++= Seq("--release", "17"),

    libraryDependencies ++= Seq(
      "org.scalatest" %% "scalatest" % "3.2.19" % Test,
      "org.scalatestplus" %% "scalacheck-1-18" % "3.2.19.0" % Test,
      // LayeringSuite: the import direction between the public API and kstate's internals,
      // checked on the compiled classes; pyspark's jars provide slf4j
      ("com.tngtech.archunit" % "archunit" % "1.4.1" % Test).excludeAll(ExclusionRule("org.slf4j"))
    ) ++ kafkaStreamsOracle :+ protocDep,
    ivyConfigurations += Protoc,

    // kstate's Spark Connect classes from its .proto (docs/connect.md), for Spark's shaded
    // protobuf runtime (org.sparkproject.connect.protobuf): the one Connect's classes use.
    Compile / sourceGenerators += Def.task {
      val protoDir = rootDir.value / "jvm" / "src" / "main" / "protobuf"
      val out = (Compile / sourceManaged).value / "protobuf"
      val protoc = protocExe(update.value)
      val protos = (protoDir ** "*.proto").get()
      IO.delete(out)
      IO.createDirectory(out)
      val rc = scala.sys.process.Process(Seq(protoc.getAbsolutePath, s"-I$protoDir", s"--java_out=$out") ++
        protos.map(_.getAbsolutePath)).!
      if (rc != 0) sys.error(s"protoc failed ($rc) on $protos")
      val javas = (out ** "*.java").get()
      javas.foreach(f => IO.write(f, IO.read(f).replace("com.google.protobuf", "org.sparkproject.connect.protobuf")))
      javas
    }.taskValue,
    protocPath := {
      val out = target.value / "protoc-path"
      IO.write(out, protocExe(update.value).getAbsolutePath)
      out
    },

    // kstate's error conditions (condition, SQLSTATE, message template; docs/errors.md): one file,
    // python/kstate/error_conditions.json, read by the Python package and, as this resource, by
    // io.kstate.KStateException through Spark's ErrorClassesJsonReader.
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "io" / "kstate" / "error-conditions.json"
      IO.copyFile(rootDir.value / "python" / "kstate" / "error_conditions.json", out)
      Seq(out)
    }.taskValue,

    // io.kstate.BuildInfo: version and Spark minor, checked by the Python package at first use.
    Compile / sourceGenerators += Def.task {
      val f = (Compile / sourceManaged).value / "io" / "kstate" / "BuildInfo.scala"
      IO.write(f,
        s"""package io.kstate
           |
           |/** Generated by build.sbt. */
           |object BuildInfo {
           |  val version: String = "${version.value}"
           |  val sparkMinor: String = "$minor"
           |}
           |""".stripMargin)
      Seq(f)
    }.taskValue,

    // `package` yields <target>/scala-2.13/kstate-spark<minor>_2.13-<version>.jar: only kstate's
    // own classes (Spark is Provided; nothing is assembled in).

    Test / fork := true,
    // Two forked test JVMs at once (each runs its suites one after another, one SparkSession at a
    // time): the Spark streaming suites (io.kstate.*) wait on micro-batches more than they use the
    // CPU, so they run beside the CPU-bound unit and property suites. Keeps `make test` within
    // its budget on 2 cores (docs/contributing.md, "Test time"). Two of the streaming suites run
    // in the unit group so that both groups take about as long (measured 2026-11-27, side by side:
    // both groups finished within 2 s of each other, 4:42 for the whole `sbt test`).
    Test / parallelExecution := true,
    Test / testGrouping := {
      val inUnitGroup = Set("io.kstate.KafkaStreamsDifferentialSuite", "io.kstate.TableAggregateStreamingSuite")
      // and one the other way: on 2026-11-29 the unit group's suites took 352 s against 293 s
      val inStreamingGroup = Set("org.apache.spark.sql.kstate.CheckpointFormatV2StreamingSuite")
      val (streaming, unit) = (Test / definedTests).value
        .partition(t => (t.name.startsWith("io.kstate.") && !inUnitGroup(t.name)) || inStreamingGroup(t.name))
      // C1 only in the test JVMs, not in `Test/runMain` (the Scala benchmarks run with the full JIT)
      val fork = ForkOptions()
        .withRunJVMOptions((Test / javaOptions).value.toVector :+ "-XX:TieredStopAtLevel=1")
        .withWorkingDirectory((Test / baseDirectory).value)
      Seq(Tests.Group("streaming", streaming, Tests.SubProcess(fork)),
        Tests.Group("unit", unit, Tests.SubProcess(fork)))
    },
    // `make test-fast` (docs/contributing.md, "Test tiers"): the unit and property suites, without
    // the suites that run streaming queries or a Spark session's planner, nor the differential
    // suites that drive Kafka Streams' TopologyTestDriver.
    testFast := Def.taskDyn {
      val slow = Seq("Streaming", "Differential", "KafkaSuite", "SparkOperatorsOnKStateStore", "RealTimeMode",
        "RocksDBConformance", "RocksDBChangelogConformance", "HDFSConformance", // Spark's providers, not kstate's
        "KStateStateReader", "KStateCheckRule", "WindowedDistinct")
      val fast = (Test / definedTestNames).value.filterNot(n => slow.exists(n.contains)).sorted
      (Test / testOnly).toTask(fast.mkString(" ", " ", ""))
    }.value,
    // sbt's default restrictions hold forked test groups to one at a time
    // (`Tags.limit(ForkedTestGroup, 1)`), and a `+=` of a higher limit leaves that rule in force:
    // until 2026-11-27 the two groups above ran one after the other (unit 20:42:04-20:45:25,
    // streaming 20:45:27-20:48:57 in that day's log). Replaced, not appended to.
    Global / concurrentRestrictions := Seq(
      Tags.limitAll(math.max(2, java.lang.Runtime.getRuntime.availableProcessors)),
      Tags.limit(Tags.ForkedTestGroup, 2),
      Tags.exclusiveGroup(Tags.Clean)),
    // The test JVMs add -XX:TieredStopAtLevel=1 (C1 only, in `testGrouping` above): the suites are
    // many small Spark queries on 2 cores, where C2's compilations cost more CPU than they pay
    // back. Measured 2026-11-27: four streaming suites 115-122 s against 126-128 s with the
    // default JIT, alternating; whole `sbt test` runs 6:18 and 6:54 against 6:55, one each
    // (docs/contributing.md, "Test time"). Not here: `Test/runMain` (the Scala benchmarks of
    // `make bench`) inherits these options, and a benchmark must run with the full JIT.
    Test / javaOptions ++= Seq("-Xmx4g", "-Xss4m") ++ sparkJavaModuleOptions ++ Seq(
      "-Dspark.testing=1",
      "-Dspark.ui.enabled=false",
      "-Dspark.ui.showConsoleProgress=false",
      "-Dspark.unsafe.exceptionOnMemoryLeak=true",
      s"-Djava.io.tmpdir=${(target.value / "tmp").getAbsolutePath}",
      s"-Dspark.sql.warehouse.dir=${(target.value / "spark-warehouse").getAbsolutePath}"
    ),
    Test / testOptions += {
      val tmp = target.value / "tmp"
      Tests.Setup(() => IO.createDirectory(tmp))
    },
    // D: durations, F: full stack traces on failure.
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oDF"),
    Test / baseDirectory := rootDir.value,
    run / fork := true,
    run / javaOptions ++= sparkJavaModuleOptions
)

// Spark 4.3, the pinned minor: `bin/sbt package` / `bin/sbt test` (make jar, make test).
lazy val root = (project in file("."))
  .settings(kstateSettings(sparkMinor))
  .settings(
    target := rootDir.value / "jvm" / "target",
    // Spark (and all it brings) is "provided" by pyspark's jars: on the compile and test
    // classpath, never packaged.
    Compile / unmanagedJars ++= (sparkJarsDir ** "*.jar").get().filterNot(isToolchainJar).map(Attributed.blank),
    libraryDependencies ++= kafkaBrokerDeps ++ kafkaConnectorDeps ++ checkpointStoreDeps.map(m =>
      if (m.configurations.contains(S3AConnector.name)) m.excludeAll(s3aExclusions: _*) else m),
    ivyConfigurations ++= Seq(KafkaBroker, KafkaConnector, HdfsCluster, S3Server, S3AConnector),
    checkpointStoresClasspath := {
      val report = update.value
      def jars(c: Configuration): Seq[String] =
        report.select(configurationFilter(c.name), moduleFilter(), artifactFilter(`type` = "jar" | "bundle")).map(_.getAbsolutePath).distinct.sorted
      def list(xs: Seq[String]): String = xs.map(x => "\"" + x.replace("\\", "\\\\") + "\"").mkString("[\n    ", ",\n    ", "\n  ]")
      val out = target.value / "checkpoint-stores-classpath.json"
      IO.write(out, s"""{\n  "hdfs": ${list(jars(HdfsCluster))},\n  "s3server": ${list(jars(S3Server))},\n  "s3a": ${list(jars(S3AConnector))}\n}\n""")
      streams.value.log.info(s"wrote $out")
      out
    },
    kafkaTestClasspath := {
      val report = update.value
      def jars(c: Configuration): Seq[String] =
        report.select(configurationFilter(c.name), moduleFilter(), artifactFilter(`type` = "jar" | "bundle")).map(_.getAbsolutePath).distinct.sorted
      def list(xs: Seq[String]): String = xs.map(x => "\"" + x.replace("\\", "\\\\") + "\"").mkString("[\n    ", ",\n    ", "\n  ]")
      val out = target.value / "kafka-test-classpath.json"
      IO.write(out, s"""{\n  "broker": ${list(jars(KafkaBroker))},\n  "connector": ${list(jars(KafkaConnector))}\n}\n""")
      streams.value.log.info(s"wrote $out")
      out
    }
  )

// Spark 4.2: `bin/sbt spark42/package` / `bin/sbt spark42/test` (make jar-spark42,
// make test-spark42). Spark from Maven Central, Provided. The test classpath adds Spark's own
// test jars for StateStoreSuiteBase (jvm/src/test/spark-4.2/scala, SparkStateStoreSuiteBaseSuite).
// Its base directory holds nothing (sources, target and test directory are set above and below).
lazy val spark42 = (project in file("jvm/spark-4.2"))
  .settings(kstateSettings("4.2"))
  .settings(
    target := rootDir.value / "jvm" / "target" / "spark-4.2",
    libraryDependencies ++= Seq("spark-core", "spark-catalyst", "spark-sql").flatMap { m =>
      Seq("org.apache.spark" %% m % spark42Version % Provided,
        ("org.apache.spark" %% m % spark42Version % Test).classifier("tests"))
    } :+ ("org.apache.spark" %% "spark-connect" % spark42Version % Provided) // kstate's Connect plugin
  )
