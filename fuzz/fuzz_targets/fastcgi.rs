//! The FastCGI record layer (`leash::fastcgi`) and the server's job messages
//! (`leash::fastcgi_server::Job`): any bytes read as a stream of records; each record and
//! each name-value body re-encoded reads back the same; a job message decodes or is
//! refused, and a decoded one re-encodes to one that decodes the same.
#![no_main]
use leash::fastcgi as fcgi;
use leash::fastcgi_server::Job;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = fcgi::parse_all(data);
    let mut r = data;
    while let Ok(Some(rec)) = fcgi::read_record(&mut r) {
        assert!(rec.content.len() <= fcgi::MAX_CONTENT);
        let again = fcgi::record(rec.kind, rec.id, &rec.content);
        assert_eq!(again.len() % 8, 0);
        let back = fcgi::read_record(&mut again.as_slice()).expect("reads").expect("a record");
        assert_eq!(back, rec);
        if let Ok(pairs) = fcgi::parse_pairs(&rec.content) {
            let enc = fcgi::encode_pairs(pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())));
            assert_eq!(fcgi::parse_pairs(&enc).expect("re-encoded pairs parse"), pairs);
        }
        if rec.kind == fcgi::GET_VALUES {
            let reply = fcgi::get_values_result(&rec.content, 7, 7);
            assert!(fcgi::read_record(&mut reply.as_slice()).is_ok());
        }
    }
    if let Some(job) = Job::decode(data) {
        assert_eq!(Job::decode(&job.encode()), Some(job));
    }
});
