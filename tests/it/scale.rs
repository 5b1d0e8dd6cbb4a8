//! The site's cost is linear in the datasets: a dataset's pages keep their size however many
//! others there are, the index and the sidebar name the newest few, and the dataset lists
//! name every one.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{baseline_slice, echomark};

/// Builds `n` copies of one small archive, each its own dataset (`d01` …), and returns the
/// sizes of every file of the site by path.
fn site_of(n: usize, dir: &Path) -> BTreeMap<String, u64> {
    let mut archive = baseline_slice();
    let results = archive["results"].as_array_mut().unwrap();
    results.retain(|r| r["protocol"] == "tcp");
    let raw = dir.join(format!("raw-{n}"));
    for i in 1..=n {
        let folder = raw.join(format!("d{i:02}"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("archive.json"),
            serde_json::to_vec(&archive).unwrap(),
        )
        .unwrap();
    }
    let out = dir.join(format!("site-{n}"));
    let o = echomark(&[
        "build",
        "--raw",
        raw.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut sizes = BTreeMap::new();
    let mut stack = vec![out.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(&out)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                sizes.insert(rel, path.metadata().unwrap().len());
            }
        }
    }
    sizes
}

/// Two site sizes, both above every cap on what a page lists (the landing page's 20
/// newest, a sidebar's 12) and with as many digits, so a page that lists only the newest is
/// byte for byte the same size in both.
const FEW: usize = 21;
const MANY: usize = 42;

fn text(dir: &Path, n: usize, rel: &str) -> String {
    std::fs::read_to_string(dir.join(format!("site-{n}")).join(rel)).unwrap()
}

#[test]
fn a_datasets_pages_keep_their_size_however_many_datasets_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let (few, many) = (site_of(FEW, dir.path()), site_of(MANY, dir.path()));
    // The first dataset's pages, in both languages: the sidebar names the same number of
    // datasets (the 12 newest, this one, and a link to all), so nothing grows.
    let pages: Vec<&String> = few
        .keys()
        .filter(|k| k.starts_with("en/d01/") || k.starts_with("zh/d01/"))
        .collect();
    assert!(pages.len() >= 4, "{pages:?}");
    for page in pages {
        assert_eq!(few[page], many[page], "{page} grew with the other datasets");
    }
    // The index and the landing page too.
    for page in ["en/index.html", "zh/index.md", "index.html"] {
        assert_eq!(few[page], many[page], "{page} grew with the datasets");
    }
    // The landing page says, in each language, how many it names of how many.
    let landing = text(dir.path(), MANY, "index.html");
    assert!(
        landing.contains(&format!(
            "<p lang=\"en\">The 20 newest of {MANY} datasets.</p>"
        )),
        "{landing}"
    );
    assert!(
        landing.contains(&format!("{MANY} 个数据集中最新的 20 个")),
        "{landing}"
    );
    // The sidebar of a dataset's page: the 12 newest datasets of its host, itself, the list.
    let overview = text(dir.path(), MANY, "en/d01/overview.html");
    let sidebar = &overview[overview.find("<nav").unwrap()..overview.find("</nav>").unwrap()];
    assert_eq!(sidebar.matches("class=\"dataset").count(), 13, "{sidebar}");
    assert!(
        sidebar.contains(&format!("All {MANY} datasets of this host")),
        "{sidebar}"
    );
    // The index names the 20 newest and links the lists, which name every dataset.
    let index = text(dir.path(), MANY, "en/index.md");
    let rows = index.lines().filter(|l| l.starts_with("| [d")).count();
    assert_eq!(rows, 20, "{index}");
    assert!(
        index.contains(&format!("The 20 newest of {MANY} datasets")),
        "{index}"
    );
    let lists = text(dir.path(), MANY, "en/datasets/index.md");
    let host_page = lists
        .split("](")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("a host list page");
    let host = text(dir.path(), MANY, &format!("en/datasets/{host_page}"));
    for i in 1..=MANY {
        assert!(
            host.contains(&format!("(../d{i:02}/overview.md)")),
            "d{i:02} on {host_page}"
        );
    }
    // The history page shows the series' datasets (the newest 60 at most).
    let history = text(dir.path(), MANY, &format!("en/d{MANY}/history.md"));
    assert!(history.contains(&format!("{MANY} datasets")), "{history}");
}
