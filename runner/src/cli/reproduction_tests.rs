//! Every reproduction command the committed site publishes, parsed by this binary's own CLI,
//! plans the archives of its dataset: the same backends or servers, the same settings
//! (protocols, loads, IO profiles, repetitions, durations, shuffle seed, options) and the
//! same file names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Parser;
use echomark_archive::Settings;

use super::{Cli, Command};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The shell lines of the overview's reproduction block.
fn published_commands(slug: &str) -> Vec<String> {
    let page = workspace().join("site/en").join(slug).join("overview.md");
    let text = std::fs::read_to_string(&page)
        .unwrap_or_else(|e| panic!("{}: {e} (run `echomark build`)", page.display()));
    let mut lines = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        match (in_block, line.trim_start().starts_with("```")) {
            (false, true) => in_block = line.trim_start() == "```sh",
            (true, true) => in_block = false,
            (true, false) => lines.push(line.to_string()),
            (false, false) => {}
        }
    }
    lines
        .into_iter()
        .filter(|l| {
            l.contains("echomark-runner matrix")
                || l.starts_with("scripts/fleet-in-namespaces ")
                || l.starts_with("mv ")
        })
        .collect()
}

/// What is compared: the settings a matrix records, without the server's machine (this
/// host is described afresh when a command is parsed).
fn comparable(mut settings: Settings) -> Settings {
    if let Some(server) = settings.external_server.as_mut() {
        server.machine = None;
        // Found out by the run (the server's version, hash and package), not asked for.
        server.identity = None;
    }
    if let Some(fleet) = settings.fleet.as_mut() {
        // Said by whatever started the pods, not by the matrix's flags.
        fleet.launcher = None;
    }
    settings
}

#[test]
fn every_published_matrix_command_plans_its_datasets_archives() {
    let layout = echomark::read::discover(&[workspace().join("raw-results")]).unwrap();
    assert!(layout.len() >= 10, "the committed datasets: {layout:?}");
    // Each dataset is read whole: they are read on every core (this binary's other tests are
    // quick).
    let layout: Vec<(&String, &Vec<PathBuf>)> = layout.iter().collect();
    let checked: usize = echomark::parallel::map_in_order(&layout, |(name, files)| {
        published_commands_plan(name, files)
    })
    .into_iter()
    .sum();
    assert!(checked >= 15, "{checked} archives checked");
}

/// Checks that the reproduction commands published for dataset `name` (its archive `files`)
/// plan exactly its archives, and returns how many archives that was.
fn published_commands_plan(name: &str, files: &[PathBuf]) -> usize {
    let dataset = echomark::read::load_one(name, files).unwrap();
    let slug = echomark::site::pages::dataset_slug(&dataset);
    if dataset.has_imported() {
        // Other tools' runs beside echomark's: the page names the script that measures
        // them all (its own tests run it), and no bare matrix command.
        let page = workspace().join("site/en").join(&slug).join("overview.md");
        let text = std::fs::read_to_string(&page).unwrap();
        assert!(
            text.contains("\nscripts/measure-"),
            "{slug}: names its script"
        );
        assert!(published_commands(&slug).is_empty(), "{slug}");
        return 0;
    }
    // Each archive file of the dataset, by its path under the workspace.
    let mut recorded: BTreeMap<String, (String, Settings)> = BTreeMap::new();
    for path in files {
        let text = std::fs::read_to_string(path).unwrap();
        let archive: echomark_archive::Archive = serde_json::from_str(&text).unwrap();
        let key = format!(
            "raw-results/{name}/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        recorded.insert(
            key,
            (archive.backend.to_string(), comparable(archive.settings)),
        );
    }
    let lines = published_commands(&slug);
    let renames: BTreeMap<String, String> = lines
        .iter()
        .filter_map(|l| {
            let words = shlex::split(l.strip_prefix("mv ")?)?;
            let [from, to] = <[String; 2]>::try_from(words).ok()?;
            Some((from, to))
        })
        .collect();
    let mut planned: BTreeMap<String, (String, Settings)> = BTreeMap::new();
    for line in lines.iter().filter(|l| !l.starts_with("mv ")) {
        let mut words = shlex::split(line).unwrap_or_else(|| panic!("{slug}: {line}"));
        if words[0] == "scripts/across-namespaces" {
            words.remove(0);
        }
        if words[0] == "scripts/fleet-in-namespaces" {
            // The pods' command after `--` is echomark-runner's arguments.
            let dashes = words
                .iter()
                .position(|w| w == "--")
                .expect("-- before the command");
            words.drain(..=dashes);
            words.insert(0, "echomark-runner".to_string());
        }
        let cli = Cli::try_parse_from(&words)
            .unwrap_or_else(|e| panic!("{slug}: `{line}` does not parse: {e}"));
        let Command::Matrix(args) = cli.command else {
            panic!("{slug}: `{line}` is not a matrix command")
        };
        let request = args
            .to_request()
            .unwrap_or_else(|e| panic!("{slug}: `{line}`: {e}"));
        let archives = request
            .planned_archives()
            .unwrap_or_else(|e| panic!("{slug}: `{line}`: {e}"));
        let out = args.out.clone().expect("--out").display().to_string();
        for (backend, settings) in archives {
            let written = if request.archive_names().len() > 1 {
                format!("{out}/{backend}.json")
            } else {
                out.clone()
            };
            let file = renames.get(&written).cloned().unwrap_or(written);
            let previous = planned.insert(file.clone(), (backend, comparable(settings)));
            assert!(previous.is_none(), "{slug}: two commands write {file}");
        }
    }
    assert_eq!(
        planned.keys().collect::<Vec<_>>(),
        recorded.keys().collect::<Vec<_>>(),
        "{slug}: the files the published commands write"
    );
    for (file, (backend, settings)) in &recorded {
        let (planned_backend, planned_settings) = &planned[file];
        assert_eq!(planned_backend, backend, "{file}: backend");
        assert_eq!(planned_settings, settings, "{file}: settings");
    }
    recorded.len()
}
