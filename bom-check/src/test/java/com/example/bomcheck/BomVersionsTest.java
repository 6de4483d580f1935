package com.example.bomcheck;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The BOM names the versions Idem is built and tested with: each of its version properties has
 * the same name and value in the root pom.xml, so a version bumped in the build and not in the
 * BOM fails here.
 */
class BomVersionsTest {

  @Test
  void everyVersionOfTheBomIsTheBuildsVersion() throws Exception {
    Map<String, String> bom = properties(Path.of("../bom/pom.xml"));
    Map<String, String> build = properties(Path.of("../pom.xml"));
    assertThat(bom).isNotEmpty();
    Map<String, String> expected = new LinkedHashMap<>();
    bom.keySet().forEach(name -> expected.put(name, build.get(name)));
    assertThat(bom).as("bom/pom.xml's properties against the root pom.xml's").isEqualTo(expected);
  }

  private static Map<String, String> properties(Path pom) throws Exception {
    Element project = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile()).getDocumentElement();
    Map<String, String> properties = new LinkedHashMap<>();
    NodeList children = project.getChildNodes();
    for (int i = 0; i < children.getLength(); i++) {
      if (children.item(i) instanceof Element e && e.getTagName().equals("properties")) {
        NodeList props = e.getChildNodes();
        for (int j = 0; j < props.getLength(); j++) {
          Node p = props.item(j);
          if (p instanceof Element property) {
            properties.put(property.getTagName(), property.getTextContent().trim());
          }
        }
      }
    }
    return properties;
  }
}
